"""``--output`` and ``gptuner bundle`` of an external-data model open on their own.

Defect (found tuning MiniLM end to end): ONNX Runtime's optimized model keeps the weights it did
not change as references into the data file beside the model it loaded (``mlp.onnx.data``). The
exported copy of the artifact held only ``model.optimized.onnx`` + ``session.json``, so opening
it failed with "External data path does not exist", for ``--output`` and the bundle alike.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from gptuner_core.cli import main

from .conftest import QUICK


MLP = Path(__file__).resolve().parents[2] / "assets" / "mlp_digits.onnx"
DATA = Path(__file__).resolve().parents[2] / "assets" / "mlp_digits_eval.npz"


@pytest.fixture
def external_model(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    model = folder / "mlp.onnx"
    onnx.save_model(onnx.load(str(MLP)), str(model), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="mlp.onnx.data", size_threshold=0)
    return model


def _opens(artifact: Path) -> None:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(artifact / "model.optimized.onnx"), providers=["CPUExecutionProvider"])
    with np.load(DATA) as d:
        out = sess.run(None, {"input": d["input"][:4]})
    assert out[0].shape == (4, 10)


def test_output_and_bundle_of_an_external_data_model_are_self_contained(
    external_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(tmp_path / "locks"))
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "out"
    study = tmp_path / "study"
    rc = main(["tune", str(external_model), "--backend", "onnxruntime", "--dataset", str(DATA),
               "--batch-size", "8", "--expr", "-ort:enable_mem_pattern=[on|off]", "--epsilon", "1e-3",
               "--search", "full", "--revalidate-top-k", "0", "--profile-runs", "0", "--drift-every", "0",
               "--study", str(study), "--output", str(out), "--quiet",
               *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]])
    assert rc == 0
    assert main(["bundle", str(study), "-o", str(tmp_path / "bundle")]) == 0
    (tmp_path / "models" / "mlp.onnx.data").rename(tmp_path / "moved.data")  # the exports alone
    _opens(out)
    _opens(tmp_path / "bundle" / "artifact" / "ort")
    # the bundle's baseline loads from the bundle alone (the model it was built from included)
    (tmp_path / "moved.data").rename(tmp_path / "models" / "mlp.onnx.data")
    gate = tmp_path / "gate.json"
    rc = main(["gate", str(tmp_path / "bundle"), "--model", str(external_model), "--threshold", "0.5",
               "--max-rounds", "4", "--json", str(gate),
               *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]])
    res = json.loads(gate.read_text())
    assert "could not" not in res["message"] and res["rounds"] >= 4, res["message"]
