"""New run with torch models: the bundled torch sample, and an uploaded .py factory that runs
only after the user confirmed the named file (AppTest, real torch backend)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_tests.conftest import APP


pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _new_run(ws, monkeypatch) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page("app_pages/2_New_run.py").run()
    assert not at.exception, at.exception
    return at


@pytest.mark.slow
def test_bundled_torch_sample(empty_workspace, monkeypatch) -> None:
    """Defect: the torch backend was offered but the only models were ONNX samples."""
    at = _new_run(empty_workspace, monkeypatch)
    assert "torch_digits_cnn (torch)" in at.selectbox(key="nr_sample").options
    at.selectbox(key="nr_sample").set_value("torch_digits_cnn (torch)").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="nr_backend").options == ["torch"]
    assert at.selectbox(key="nr_task").value == "top1"  # the eval set has labels
    assert at.button(key="nr_start").disabled, "a study needs a gate (or No gate)"
    at.checkbox(key="nr_use_eps").check().run()
    config = " ".join(c.value for c in at.code)
    assert 'torch_digits_cnn.py:factory"' in config and "torch_digits_eval.npz" in config
    assert '"backend": "torch"' in config and "-torch:precision=[fp32|bf16]" in config
    assert not at.button(key="nr_start").disabled


def test_uploaded_factory_runs_only_after_confirmation(empty_workspace, tmp_path, monkeypatch) -> None:
    """A .py runs code: the page names the file and asks first; until then nothing imports it
    and Start stays disabled. After the confirmation its knobs are read (the code ran)."""
    marker = tmp_path / "factory-ran"
    source = (f"open({str(marker)!r}, 'w').write('ran')\n"
              "import torch\n\n"
              "def factory():\n"
              "    return torch.nn.Sequential(torch.nn.Linear(4, 2)), (torch.zeros(2, 4),)\n")
    at = _new_run(empty_workspace, monkeypatch)
    at.radio(key="nr_source").set_value("Upload").run()
    at.file_uploader(key="nr_model_file").upload("mynet.py", source.encode()).run()
    assert not at.exception, at.exception
    warning = " ".join(w.value for w in at.warning)
    assert "mynet" in warning and ".py:factory" in warning and "imported and run" in warning
    assert "I trust this code: use the uploaded 'mynet.py'" in at.button(key="nr_trust_upload").label
    assert at.button(key="nr_start").disabled
    assert not marker.exists()
    at.button(key="nr_trust_upload").click().run()
    assert not at.exception, at.exception
    assert marker.exists()
    assert at.selectbox(key="nr_backend").value == "torch"
    at.checkbox(key="nr_use_eps").check().run()
    assert not at.button(key="nr_start").disabled
    assert any('mynet' in c.value and '.py:factory"' in c.value for c in at.code)


def test_bad_py_upload_is_one_line(empty_workspace, monkeypatch) -> None:
    at = _new_run(empty_workspace, monkeypatch)
    at.radio(key="nr_source").set_value("Upload").run()
    at.file_uploader(key="nr_model_file").upload("broken.py", b"def factory(:\n").run()
    assert not at.exception, at.exception
    assert any("upload 'broken.py' is not valid Python (line 1" in e.value for e in at.error)
    assert not list(empty_workspace.rglob("*.py"))


def test_confirmed_factory_that_raises_is_one_line(empty_workspace, monkeypatch) -> None:
    at = _new_run(empty_workspace, monkeypatch)
    at.radio(key="nr_source").set_value("Upload").run()
    at.file_uploader(key="nr_model_file").upload(
        "bad.py", b"def factory():\n    raise RuntimeError('no weights here')\n").run()
    at.button(key="nr_trust_upload").click().run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any("the factory raised RuntimeError: no weights here" in e and "\n" not in e
               for e in errors), errors
    assert at.button(key="nr_start").disabled
