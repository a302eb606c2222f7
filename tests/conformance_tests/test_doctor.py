"""``gptuner doctor``, tested here up to its first missing requirement.

On our machines TensorRT's libraries cannot be installed, so the doctor must stop at the first
requirement that is missing, with the precise reason, and say so. With the real 11.1 bindings
(imported against stand-in libraries, see ``wheels.py``) and the real cuda-bindings on the path,
it gets one step further: TensorRT passes, and it stops at cuda-python because there is no NVIDIA
driver. Everything after that (builds, runs, U1-U3) only a TensorRT machine can run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gptuner_core.backends.tensorrt.doctor_checks import Stop
from gptuner_core.backends.tensorrt.doctor_checks import compare
from gptuner_core.backends.tensorrt.doctor_checks import feeds
from gptuner_core.backends.tensorrt.doctor_checks import reference
from gptuner_core.backends.tensorrt.doctor_checks import tiny_model
from gptuner_core.cli import main


ROOT = Path(__file__).resolve().parents[2]
no_tensorrt = pytest.mark.skipif(importlib.util.find_spec("tensorrt") is not None, reason="tensorrt is importable here")


@no_tensorrt
def test_stops_at_the_missing_tensorrt(capsys: pytest.CaptureFixture[str]) -> None:
    """Here: platform ok, then tensorrt missing, with the reason; exit status 1."""
    assert main(["doctor"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "gptuner doctor report"
    assert lines[1].startswith("gptuner ") and "Python " in lines[1]
    assert lines[2].startswith("[ok]   platform: Linux ")
    assert lines[3] == "[FAIL] tensorrt: tensorrt is not importable (No module named 'tensorrt')"
    assert lines[4] == "stopped at the first missing requirement: fix it and run 'gptuner doctor' again"
    assert len(lines) == 5


@no_tensorrt
def test_json_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False
    assert [(c["name"], c["status"]) for c in report["checks"]] == [("platform", "ok"), ("tensorrt", "FAIL")]


@pytest.mark.conformance
def test_real_bindings_stop_at_the_driver(tmp_path: Path) -> None:
    """Real TensorRT 11.1 bindings + real cuda-bindings 13.0, no driver: tensorrt ok, cuda-python FAIL."""
    import wheels

    if Path("/dev/nvidiactl").exists():
        pytest.skip("an NVIDIA driver is present; this checks the driver-less path")
    try:
        env = wheels.trt_env(*wheels.TRT_WHEELS[0])
        cuda = wheels.unpacked("cuda-bindings", "13.0.0")
    except wheels.Unavailable as exc:
        pytest.skip(str(exc))
    alias = tmp_path / "alias" / "tensorrt"  # what the 'tensorrt' meta package provides: the bindings' names
    alias.mkdir(parents=True)
    (alias / "__init__.py").write_text("from tensorrt_bindings import *  # noqa\nfrom tensorrt_bindings import __version__\n")
    env["PYTHONPATH"] = os.pathsep.join([str(alias.parent), env["PYTHONPATH"], str(cuda), str(ROOT)])
    res = subprocess.run([sys.executable, "-m", "gptuner_core", "doctor"], capture_output=True, text=True, env=env, timeout=120)
    lines = res.stdout.splitlines()
    assert res.returncode == 1, res.stdout + res.stderr
    assert "[ok]   tensorrt: TensorRT 11.1.0.106 (IBuilderConfig.build_route and all_build_routes present)" in lines
    assert any(x.startswith("[FAIL] cuda-python: no NVIDIA driver: cudaDriverGetVersion reports 0") for x in lines)
    assert lines[-1].startswith("stopped at the first missing requirement")


def test_tiny_model_and_comparison(tmp_path: Path) -> None:
    """The bundled tiny model runs on ONNX Runtime; the comparison fails loudly past the tolerance."""
    want = reference(tiny_model(tmp_path / "m.onnx"))
    assert want["y"].shape == (2, 8)
    assert "max |diff|" in compare({"y": want["y"] + 1e-5}, want)
    with pytest.raises(Stop, match="differ from ONNX Runtime"):
        compare({"y": want["y"] + np.float32(0.1)}, want)
    ext = reference(tiny_model(tmp_path / "e" / "m.onnx", external=True))
    assert (tmp_path / "e" / "m.onnx.data").exists() and np.array_equal(ext["y"], want["y"])
    assert feeds()["x"].dtype == np.float32


def test_report_format_is_documented() -> None:
    """docs/tensorrt.md shows the report as the doctor prints it."""
    doc = (ROOT / "docs" / "tensorrt.md").read_text()
    for line in ("gptuner doctor report", "[FAIL] tensorrt: tensorrt is not importable (No module named 'tensorrt')",
                 "stopped at the first missing requirement: fix it and run 'gptuner doctor' again", "  [info] U1 route read-back"):
        assert line in doc
