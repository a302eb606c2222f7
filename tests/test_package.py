"""The package imports anywhere: no heavy library is loaded by ``import gptuner_core``."""

from __future__ import annotations

import subprocess
import sys


HEAVY = ("onnxruntime", "torch", "tensorrt", "cuda", "optuna", "streamlit", "plotly", "pandas", "scipy", "ray")


def test_import_is_light():
    """A fresh interpreter imports gptuner_core and its public API without heavy libraries."""
    code = (
        "import sys, gptuner_core\n"
        "assert all(hasattr(gptuner_core, n) for n in gptuner_core.__all__)\n"
        f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r}]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_backend_registry_reports_reasons():
    """Every backend is listed; TensorRT says precisely why it cannot run here."""
    from gptuner_core.backends import available_backends
    from gptuner_core.backends import default_backend_name

    listed = dict(available_backends())
    assert {"tensorrt", "onnxruntime", "torch", "trtexec"} <= set(listed)
    assert listed["onnxruntime"].available
    if not listed["tensorrt"].available:
        assert listed["tensorrt"].reason
        assert default_backend_name() == "onnxruntime"
