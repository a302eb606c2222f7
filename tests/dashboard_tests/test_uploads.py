"""Model uploads: ONNX, a torch ``.py`` factory or a ``.pt2``; bad ones get one line and are not
stored; a ``.py`` is checked without running it."""

from __future__ import annotations

import pytest

from gptuner_core.dashboard import workspace
from gptuner_core.dashboard.workspace import UploadError
from gptuner_core.dashboard.workspace import save_upload


FACTORY_PY = b"import torch\n\ndef factory():\n    return torch.nn.Linear(4, 2), (torch.zeros(1, 4),)\n"


def test_py_factory_is_stored_without_running(tmp_path) -> None:
    """Defect: upload took only .onnx. A .py factory is accepted (parsed, never executed)."""
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\n".encode() + FACTORY_PY
    path = save_upload(tmp_path, "net.py", source, kind="model")
    assert path.suffix == ".py" and path.read_bytes() == source
    assert not marker.exists()


@pytest.mark.parametrize(("name", "data", "expected"), [
    ("net.py", b"def factory(:\n", "is not valid Python (line 1"),
    ("net.py", b"def make():\n    pass\n", "expected a top-level function factory() returning "
               "(module, example_inputs) (found make)"),
    ("net.py", b"\xff\xfe\x00binary", "is not a Python source file"),
    ("net.pt2", b"not a zip", "is not a torch.export program"),
    ("net.pth", b"x", "expected a .onnx or .py or .pt2 file for the model (got '.pth')"),
])
def test_bad_model_uploads_are_one_line(tmp_path, name, data, expected) -> None:
    with pytest.raises(UploadError, match=None) as info:
        save_upload(tmp_path, name, data, kind="model")
    message = str(info.value)
    assert expected in message and "\n" not in message
    assert not (tmp_path / workspace.UPLOADS).exists() or not any((tmp_path / workspace.UPLOADS).iterdir())


def test_pt2_archive_is_accepted(tmp_path) -> None:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("net/archive_format", "pt2")
    assert save_upload(tmp_path, "net.pt2", buf.getvalue(), kind="model").suffix == ".pt2"


def test_bundled_torch_sample_and_model_files() -> None:
    """Defect: the only bundled models were ONNX samples. The torch sample is offered with its
    evaluation set, for the torch backend only."""
    samples = {s.name: s for s in workspace.bundled_samples()}
    torch_sample = samples["torch_digits_cnn (torch)"]
    assert torch_sample.model.endswith("assets/torch_digits_cnn.py:factory")
    assert torch_sample.file.is_file() and torch_sample.dataset.name == "torch_digits_eval.npz"
    assert torch_sample.fits("torch") and not torch_sample.fits("onnxruntime")
    assert samples["cnn_digits"].fits("onnxruntime") and not samples["cnn_digits"].fits("torch")
    assert workspace.model_file("a/b.py:factory").as_posix() == "a/b.py"
    assert workspace.model_file("a/b.onnx").as_posix() == "a/b.onnx"
    assert workspace.is_torch_model("a/b.py:factory") and workspace.is_torch_model("m.pt2")
    assert not workspace.is_torch_model("m.onnx")
