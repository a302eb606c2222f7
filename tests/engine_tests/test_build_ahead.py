"""Build ahead on one device: a real ONNX Runtime study with two builds in flight.

Same candidates (routes, states, gate verdicts) as the sequential study; no measurement ever
overlaps a build (ONNX Runtime quantizes on the CPU it is measured on: ``build_uses_device``);
results are committed in proposal order.
"""

from __future__ import annotations

import json
import os

import pytest

from gptuner_core.cli import main
from gptuner_core.engine.scale.build_ahead import BuildAheadPool
from gptuner_core.engine.scale.scale_out import ScaleOut
from gptuner_core.engine.scale.scale_out import default_build_workers
from gptuner_core.errors import ConfigError
from gptuner_core.storage import open_store

from .conftest import QUICK
from .conftest import REPO


EXPR = "-quant:mode=[off|qdq] -quant:reduce_range=on -ort:enable_mem_pattern=[on|off]"


def _tune(study, monkeypatch, scale_out, lock=False):
    """The real CLI; ``--build-workers`` from ``scale_out``; the device lock (the tuner always
    holds one per measurement) in a folder of the test's own."""
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(study.parent / "locks"))
    workers = ["--build-workers", str(scale_out.build_workers)] if scale_out is not None else []
    args = [
        "tune", str(REPO / "assets/cnn_digits.onnx"), "--backend", "onnxruntime",
        "--dataset", str(REPO / "assets/cnn_digits_eval.npz"), "--expr", EXPR, "--search", "full",
        "--metric", "cos", "--epsilon", "0.01", "--batch-size", "8", "--revalidate-top-k", "0",
        "--drift-every", "3", "--study", str(study), "--quiet", *workers,
    ] + [f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]
    assert main(args) == 0
    with open_store(study, readonly=True) as store:
        return store.candidates(), store.events("baseline")


@pytest.mark.slow
def test_build_ahead_same_candidates_no_overlap(tmp_path, monkeypatch):
    seq, _ = _tune(tmp_path / "seq", monkeypatch, None)
    par, baselines = _tune(tmp_path / "par", monkeypatch, ScaleOut(build_workers=2), lock=True)
    assert [r.number for r in par] == list(range(len(par)))
    assert {(r.requested_route, r.state) for r in par} == {(r.requested_route, r.state) for r in seq}
    assert [r.requested_route for r in par] == [r.requested_route for r in seq]  # enumeration order
    assert baselines, "the drift sentinel ran between build-ahead candidates"
    spans = {r.number: r.extra["timeline"] for r in par if "timeline" in r.extra}
    assert len(spans) == len(par)  # every candidate was built and measured in two processes
    for a, ta in spans.items():
        if "measure_start" not in ta:
            continue
        for b, tb in spans.items():
            if a != b:  # a device-using build never runs during a measurement
                assert tb["build_end"] <= ta["measure_start"] or tb["build_start"] >= ta["measure_end"]
    overlapping = [
        (a, b) for a, ta in spans.items() for b, tb in spans.items()
        if a < b and ta["build_start"] < tb["build_end"] and tb["build_start"] < ta["build_end"]
    ]
    assert overlapping, f"no two builds ran at once: {spans}"
    first = spans[0]  # the default route: built beside the next ones, measured before all of them
    assert any(t["build_start"] < first["measure_end"] for n, t in spans.items() if n > 0), spans
    assert all(t["measure_start"] >= first["measure_end"] for n, t in spans.items() if n > 0 and "measure_start" in t)


def test_scale_out_validation_and_defaults():
    assert default_build_workers(cores=2, memory_gib=8) == 1
    assert default_build_workers(cores=16, memory_gib=128) == 5
    assert default_build_workers(cores=128, memory_gib=2000) == 8
    with pytest.raises(ConfigError, match="need Ray"):
        ScaleOut(workers=2).validated()
    with pytest.raises(ConfigError, match=">= 0"):
        ScaleOut(build_workers=-1).validated()
    assert BuildAheadPool.__name__  # importable without Ray


def test_ray_without_ray_is_one_clear_line(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(ConfigError, match=r"--ray auto needs Ray, which is not installed: pip install 'gptuner\[ray\]'"):
        ScaleOut(ray="auto", workers=2).validated()



def test_gate_overlaps_only_device_free_builds_with_a_measurement():
    """A build that runs nothing on the device (torch on a GPU, default mode) goes on while a
    candidate is measured; one that does (max-autotune) waits until the measurement is over, and
    a measurement waits for it. Real threads, ordered by events (no timing)."""
    import threading

    from gptuner_core.engine.scale.device_gate import DeviceGate

    gate = DeviceGate(build_workers=2, build_uses_device=True)
    measuring, release = threading.Event(), threading.Event()
    free_in, device_in = threading.Event(), threading.Event()

    def measure() -> None:
        with gate.measuring():
            measuring.set()
            release.wait(10)

    def build(view, entered) -> None:
        with view.building():
            entered.set()

    m = threading.Thread(target=measure)
    m.start()
    assert measuring.wait(10)
    free = threading.Thread(target=build, args=(gate.view(uses_device=False), free_in))
    device = threading.Thread(target=build, args=(gate.view(uses_device=True), device_in))
    free.start()
    device.start()
    assert free_in.wait(10), "a device-free build waited for the measurement"
    free.join(10)
    assert not device_in.is_set()  # still measuring: the device build has not started
    release.set()
    m.join(10)
    assert device_in.wait(10)
    device.join(10)
    assert gate.max_builders == 1  # only the device build counted against measurements


def test_candidates_built_beside_the_default_measure_after_it():
    """A view made ``after_default`` builds at once but measures only once the default route
    was committed; when the default failed its measurement is refused (its process is then
    killed by the caller). Real threads, ordered by events."""
    import threading

    from gptuner_core.engine.scale.device_gate import DefaultRouteFailed
    from gptuner_core.engine.scale.device_gate import DeviceGate

    gate = DeviceGate(build_workers=2, build_uses_device=False)
    built, measured = threading.Event(), threading.Event()

    def candidate(view) -> None:
        with view.building():
            built.set()
        with view.measuring():
            measured.set()

    worker = threading.Thread(target=candidate, args=(gate.view(uses_device=False, after_default=True),))
    worker.start()
    assert built.wait(10), "a candidate beside the default route did not build"
    assert not measured.wait(0.2)  # the default route has not been committed
    gate.default_done()
    assert measured.wait(10)
    worker.join(10)
    with gate.view(uses_device=False).measuring():  # an ordinary view never waited
        pass

    failed = DeviceGate(build_workers=1, build_uses_device=False)
    failed.default_done("the default route failed")
    failed.default_done()  # the first answer stands
    with pytest.raises(DefaultRouteFailed, match="default route failed"), \
            failed.view(uses_device=False, after_default=True).measuring():
        pass


def test_pool_asks_the_backend_per_route(tmp_path):
    """BuildAheadPool hands each candidate a gate that answers for its own route."""
    from gptuner_core.engine.scale.build_ahead import RouteDeviceUse
    from gptuner_core.routes import Route

    torch_cpu = RouteDeviceUse("torch", {"device": "cpu"})
    assert torch_cpu(Route.parse("-torch:mode=default"))  # CPU builds use the measured cores
    assert RouteDeviceUse("no-such-backend")(Route.parse("-a=b"))  # unknown: the safe answer
    # where round processes load: torch on the CPU loads on no device, ahead; an unknown
    # backend: the safe answer, alone in its turn
    assert torch_cpu.round_loading(Route.parse("-torch:mode=default")) == "ahead"
    assert RouteDeviceUse("no-such-backend").round_loading(Route.parse("-a=b")) == "alone"


def test_builds_share_the_cores_out(monkeypatch):
    """Each build ahead gets cores / (builds + 1) Inductor compile workers, through PyTorch's own
    variable, which the candidates' processes inherit; a value the user set is kept."""
    from types import SimpleNamespace

    from gptuner_core.engine.scale.build_ahead import COMPILE_THREADS_ENV
    from gptuner_core.engine.scale.build_ahead import compile_threads_per_build

    assert compile_threads_per_build(6, cores=16) == 2  # 5 builds + 1 measurement on the H200
    assert compile_threads_per_build(3, cores=2) == 1
    config = SimpleNamespace(backend="onnxruntime", backend_options={})
    evaluator = SimpleNamespace(ctx=SimpleNamespace(config=config))
    monkeypatch.delenv(COMPILE_THREADS_ENV, raising=False)
    pool = BuildAheadPool(evaluator, 2)
    assert os.environ[COMPILE_THREADS_ENV] == str(compile_threads_per_build(3))
    pool.close()
    assert COMPILE_THREADS_ENV not in os.environ
    monkeypatch.setenv(COMPILE_THREADS_ENV, "7")
    BuildAheadPool(evaluator, 2).close()
    assert os.environ[COMPILE_THREADS_ENV] == "7"
