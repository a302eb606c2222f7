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


def test_kernels_map_to_source_modules_and_profiler_stops(tiny):
    """Extern ATen kernels carry the module they compute; the generated C++ kernels are one layer."""
    be, build, feeds, folder = tiny
    with be.load(build) as runner:
        runner.prepare(feeds)
        before = runner.time_calls(5)
        path = capture_profile("torch", build, runner, feeds, folder, runs=8)
        assert not torch._C._autograd._profiler_enabled(), "the profiler is off again after capture"
        assert runner.time_calls(5) > 0 and before > 0
    prof = LayerProfile.load(path)
    assert prof.backend == "torch" and prof.runs == 8
    assert prof.origin_ops["conv"] == "Conv2d" and prof.origin_ops["fc"] == "Linear"
    by_name = {la.name: la for la in prof.layers}
    conv = by_name["aten::convolution#0"]
    assert conv.origins == ("conv",) and conv.kind == "aten::convolution" and conv.precision == "FP32"
    assert by_name["aten::addmm#0"].origins == ("fc",)
    generated = [la for la in prof.layers if la.kind == "inductor generated"]
    assert len(generated) == 1 and generated[0].name == "inductor generated kernels"
    assert generated[0].kernels and all(k.startswith("cpp_fused") for k in generated[0].kernels)
    assert [la.name for la in prof.layers] == ["inductor generated kernels", "aten::convolution#0", "aten::addmm#0"]
    assert all(len(la.run_ms) == 8 for la in prof.layers)
    assert set(kernel_sources(build.artifact)) >= {"aten::convolution", "aten::addmm"}


def test_two_torch_profiles_align_by_module(tiny):
    be, build, feeds, folder = tiny
    with be.load(build) as runner:
        a = LayerProfile.load(capture_profile("torch", build, runner, feeds, folder / "a", runs=6))
        b = LayerProfile.load(capture_profile("torch", build, runner, feeds, folder / "b", runs=6))
    diff = diff_profiles(a, b)
    assert {r.group for r in diff.rows} == {"conv", "fc", "inductor generated kernels"}
    assert all(not r.changes for r in diff.rows), "one build against itself: nothing changed"


def test_profiling_never_runs_while_the_samples_are_taken(tiny):
    """measure -> profile -> measure on one runner: no timed call ever runs under the profiler,
    the samples stay as recorded, the profile holds exactly its own runs, and mapping kernels
    to modules (a Dynamo trace) leaves the measured module compiled as it was."""
    from torch._dynamo.utils import counters

    from gptuner_core.measurement import SamplingSettings
    from gptuner_core.measurement import measure

    be, build, feeds, folder = tiny
    quick = SamplingSettings(warmup_s=0.01, warmup_calls=2, min_samples=10, max_samples=30, max_time_s=0.3)
    profiled: list[bool] = []
    with be.load(build) as runner:
        runner.prepare(feeds)

        def timed(n: int) -> int:
            profiled.append(torch._C._autograd._profiler_enabled())
            return runner.time_calls(n)

        first = measure(timed, quick)
        recorded = tuple(first.samples_ms)
        calls = len(profiled)
        path = capture_profile("torch", build, runner, feeds, folder / "sep", runs=7)
        assert len(profiled) == calls, "the profile does not go through the measured timing"
        graphs = counters["stats"]["unique_graphs"]
        second = measure(timed, quick)
        assert counters["stats"]["unique_graphs"] == graphs, "the measured module did not recompile"
    assert tuple(first.samples_ms) == recorded and second.stats.n_samples > 0
    assert profiled and not any(profiled), "no timed call ran under the profiler"
    assert LayerProfile.load(path).runs == 7


def test_the_build_keeps_dynamos_graph_so_a_profile_traces_nothing_again(tiny):
    """The graph Inductor was given is kept with the build (``CompiledModel.graph_nodes``): the
    profile maps kernels to modules from it, with no second Dynamo trace of the model."""
    from torch._dynamo.utils import counters

    from gptuner_core.profiles.torch_modules import trace_table

    be, build, feeds, folder = tiny
    with be.load(build) as runner:
        kept = runner.compiled.graph_nodes
        module = runner.compiled.fn._orig_mod
        traced = trace_table(module, (torch.from_numpy(feeds["x"]),))
        assert [(n.name, n.module, n.module_type) for n in kept] == \
            [(n.name, n.module, n.module_type) for n in traced.nodes.values()]
        graphs = counters["stats"]["unique_graphs"]
        path = capture_profile("torch", build, runner, feeds, folder / "kept", runs=3)
        assert counters["stats"]["unique_graphs"] == graphs, "the profile traced the model again"
    prof = LayerProfile.load(path)
    assert {la.name: la.origins for la in prof.layers}["aten::convolution#0"] == ("conv",)


def test_a_recorded_profile_is_made_after_the_device_part(tiny):
    """``record_profile`` runs the profiled calls and stops the profiler; the profile itself
    (events read, kernels mapped, file written) comes with ``finish``."""
    from gptuner_core.profiles import PROFILE_NAME
    from gptuner_core.profiles import record_profile

    be, build, feeds, folder = tiny
    with be.load(build) as runner:
        capture = record_profile("torch", build, runner, feeds, folder / "rec", runs=4)
        assert not torch._C._autograd._profiler_enabled()
        assert not (folder / "rec" / PROFILE_NAME).exists()
    out = capture.finish()
    assert out.error == "" and out.path == folder / "rec" / PROFILE_NAME
    assert LayerProfile.load(out.path).runs == 4
    failed = record_profile("no-such-backend", build, None, feeds, folder / "bad").finish()
    assert failed.path is None and "no layer profiler for backend 'no-such-backend'" in failed.error
