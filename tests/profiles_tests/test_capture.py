"""The capture entry: failure as a state, an unknown backend named, light imports."""

from __future__ import annotations

import subprocess
import sys

from gptuner_core.backends import BuildResult
from gptuner_core.profiles import record_profile


HEAVY = ("onnxruntime", "torch", "tensorrt", "streamlit", "plotly", "pandas", "optuna", "scipy")


def test_failure_is_returned_as_a_state(tmp_path):
    """A backend without a profiler gives an outcome with the reason; nothing is raised."""
    capture = record_profile("replay", BuildResult(artifact=tmp_path, effective_route=""), None, {}, tmp_path)
    out = capture.finish()
    assert out.path is None
    assert out.error == ("ProfileError: no layer profiler for backend 'replay' "
                         "(profiled backends: ['onnxruntime', 'tensorrt', 'torch'])")
    assert not (tmp_path / "profile.json").exists()


def test_profiles_and_explain_import_without_heavy_libraries():
    code = (
        "import sys\n"
        "import gptuner_core.profiles, gptuner_core.explain, gptuner_core.views.explain\n"
        "import gptuner_core.profiles.onnxruntime, gptuner_core.profiles.torch, gptuner_core.profiles.tensorrt\n"
        "import gptuner_core.cli.explain, gptuner_core.cli.diff\n"
        f"print(','.join(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == ""
