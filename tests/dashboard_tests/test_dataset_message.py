"""Issue 39 item 13: a dataset that does not fit the model is named as the user uploaded it,
never by the workspace's hashed copy (``wrongnames-f8a3fa427234.npz``, ``…/_uploads/…``)."""

from __future__ import annotations

import io

import numpy as np

from gptuner_core.dashboard.newrun import check_dataset
from gptuner_core.dashboard.workspace import save_upload
from gptuner_core.testing.dashboard_server import ROOT


def test_a_misfit_upload_is_named_as_uploaded(tmp_path) -> None:
    buf = io.BytesIO()
    np.savez(buf, wrong=np.zeros((4, 1, 28, 28), np.float32))
    saved = save_upload(tmp_path, "wrongnames.npz", buf.getvalue(), kind="dataset")
    assert saved.name != "wrongnames.npz"  # the workspace keeps a hashed copy
    msg = check_dataset("onnxruntime", str(ROOT / "assets" / "cnn_digits.onnx"), str(saved),
                        shown="wrongnames.npz")
    assert msg is not None and "'wrongnames.npz'" in msg
    assert saved.name not in msg and "_uploads" not in msg and str(tmp_path) not in msg
