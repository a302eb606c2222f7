"""torch profiles of a real Inductor build (CPU): kernels, source nodes, profiler stopped after."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gptuner_core.profiles import LayerProfile
from gptuner_core.profiles import capture_profile
from gptuner_core.profiles import diff_profiles
from gptuner_core.profiles.torch import kernel_sources


torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow

TINY = Path(__file__).resolve().parents[1] / "data" / "torch_tiny_model.py"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from gptuner_core.backends import get_backend
    from gptuner_core.routes import Route

    be = get_backend("torch", {"device": "cpu", "compile_threads": 1})
    folder = tmp_path_factory.mktemp("torch_tiny")
    build = be.build(TINY, Route.parse(""), folder / "artifact")
    rng = np.random.default_rng(0)
    feeds = {"x": rng.normal(size=(4, 1, 6, 6)).astype(np.float32)}
    return be, build, feeds, folder


def test_kernels_map_to_source_nodes_and_profiler_stops(tiny):
    """Extern ATen kernels carry their source FX nodes; the generated C++ kernels are one layer."""
    be, build, feeds, folder = tiny
    with be.load(build) as runner:
        runner.prepare(feeds)
        before = runner.time_calls(5)
        path = capture_profile("torch", build, runner, feeds, folder, runs=8)
        assert not torch._C._autograd._profiler_enabled(), "the profiler is off again after capture"
        assert runner.time_calls(5) > 0 and before > 0
    prof = LayerProfile.load(path)
    assert prof.backend == "torch" and prof.runs == 8
    by_name = {la.name: la for la in prof.layers}
    conv = by_name["aten::convolution#0"]
    assert conv.origins == ("conv2d",) and conv.kind == "aten extern kernel" and conv.precision == "FP32"
    generated = [la for la in prof.layers if la.kind.startswith("inductor generated")]
    assert len(generated) == 1 and "cpp_fused" in generated[0].name
    assert all(len(la.run_ms) == 8 for la in prof.layers)
    assert set(kernel_sources(build.artifact)) >= {"aten::convolution", "aten::addmm"}


def test_two_torch_profiles_align_by_kernel(tiny):
    be, build, feeds, folder = tiny
    with be.load(build) as runner:
        a = LayerProfile.load(capture_profile("torch", build, runner, feeds, folder / "a", runs=6))
        b = LayerProfile.load(capture_profile("torch", build, runner, feeds, folder / "b", runs=6))
    diff = diff_profiles(a, b)
    assert {r.group for r in diff.rows} >= {"conv2d", "batch_norm (+3)"}
