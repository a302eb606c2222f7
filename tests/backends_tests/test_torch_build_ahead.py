"""The torch backend when candidates are built ahead: which builds run work on the measuring
device, and a measuring process that loads what the build compiled instead of compiling again.

The build runs in a fresh interpreter, as the engine's build process does (compile only, as on a
GPU for a default-mode route: Inductor's profiler record shows no compiled-graph call); the load
runs in another fresh interpreter, as the engine's measuring process does, and reports the
Inductor and AOTAutograd cache counters of its compile: hits and no miss mean nothing was
recompiled. (Built inside the pytest process, the build could see torch settings that earlier
tests left there: in the whole suite its fresh load missed the cache, run alone it hit.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
MODEL = f"{REPO / 'assets/torch_digits_cnn.py'}:factory"

LOAD = r"""
import json, sys
from pathlib import Path
import numpy as np
from gptuner_core.backends import BuildResult, load_backend
workdir = Path(sys.argv[1])
info = json.loads((workdir / "build.json").read_text())
backend = load_backend("torch", {"device": "cpu", "compile_threads": 1})
build = BuildResult(artifact=workdir / "generated", effective_route=info["route"], info=info)
from gptuner_core.fingerprint import file_sha256
from torch._dynamo.utils import counters
runner = backend.load_ahead(build)  # a round's process before its turn: runs nothing
ahead_live = runner.compiled.switch.live  # (a profiler here would change Inductor's cache key)
graphs = counters["stats"]["unique_graphs"]
with runner:
    runner.prepare({"x": np.load(sys.argv[2])})  # its turn: the samples' first call, the study's batch
    out = runner.infer({"x": np.load(sys.argv[2])})
    np.save(sys.argv[3], out["output"])
    print(json.dumps({**runner.compiled.load_stats, "ahead_live": ahead_live,
                      "compiled_in_turn": counters["stats"]["unique_graphs"] - graphs,
                      "same_identity": runner.identity == file_sha256(build.artifact)}))
"""


BUILD = r"""
import json, sys
from pathlib import Path
import numpy as np
import torch
from gptuner_core.backends import load_backend
from gptuner_core.backends.torch_inductor import build as B
from gptuner_core.backends.torch_inductor.model import at_batch, load_model
from gptuner_core.routes import Route
model, out = sys.argv[1], Path(sys.argv[2])
backend = load_backend("torch", {"device": "cpu", "compile_threads": 1})
loaded = at_batch(load_model(model), 16)  # the study's batch: the example has 32 rows
x = loaded.example_inputs[0].numpy()
with torch.no_grad():
    np.save(out / "expected.npy", loaded.module(torch.from_numpy(x)).numpy())
np.save(out / "x.npy", x)

def graph_calls(p):  # Inductor's own record of each compiled-graph call
    return len([e.name for e in p.events() if "Call CompiledFxGraph" in e.name])

with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    result = B.build(loaded, backend.knob_database("cpu"), Route.parse("-torch:precision=fp32"),
                     out / "artifact", model_text=model, device="cpu", compile_only=True, compile_threads=1)
facts = {"build_calls": graph_calls(prof), "build_ran_model": result.info["build_ran_model"],
         "files": sorted(p.name for p in result.artifact.iterdir()), "batch": result.info["batch"]}
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    with backend.load(result) as runner:  # same process: the build's module, now live
        y = runner.infer({"x": x})["output"]
np.save(out / "same.npy", y)
facts["load_calls"] = graph_calls(prof)
print(json.dumps(facts))
"""


def test_route_uses_device_per_route():
    from torch._inductor import list_mode_options

    from gptuner_core.backends import load_backend
    from gptuner_core.backends.torch_inductor.device_use import uses_device
    from gptuner_core.routes import Route

    assert not uses_device("cuda", {})  # default mode: compiled on the CPU, nothing run
    assert not uses_device("cuda", dict(list_mode_options("reduce-overhead")))  # graphs at run
    assert uses_device("cuda", dict(list_mode_options("max-autotune-no-cudagraphs")))
    assert uses_device("cuda", {"freezing": True})  # constant folding on the device's weights
    assert uses_device("cuda", {"coordinate_descent_tuning": True})
    assert uses_device("cpu", {})  # the C++ compile runs on the cores that are measured
    cpu = load_backend("torch", {"device": "cpu"})
    assert cpu.route_uses_device(Route.parse("-torch:mode=default"))
    onnx = load_backend("onnxruntime", {})
    assert onnx.route_uses_device(Route.parse("-quant:mode=off"))  # the class's answer


@pytest.mark.slow
def test_measuring_process_loads_the_build_from_its_caches(tmp_path):
    build = subprocess.run([sys.executable, "-c", BUILD, MODEL, str(tmp_path)],
                           capture_output=True, text=True, cwd=REPO, check=False)
    assert build.returncode == 0, build.stderr[-2000:]
    facts = json.loads(build.stdout.strip().splitlines()[-1])
    assert facts["build_calls"] == 0  # compiled, never run
    assert facts["build_ran_model"] is False
    assert facts["files"] == ["graph_000.py"]
    assert facts["batch"] == 16  # compiled for the study's batch (a measuring process compiles it again)
    assert facts["load_calls"] == 1
    expected = np.load(tmp_path / "expected.npy")
    np.testing.assert_allclose(np.load(tmp_path / "same.npy"), expected, rtol=1e-4, atol=1e-4)

    proc = subprocess.run(
        [sys.executable, "-c", LOAD, str(tmp_path / "artifact"), str(tmp_path / "x.npy"),
         str(tmp_path / "y.npy")],
        capture_output=True, text=True, cwd=REPO, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    stats = json.loads(proc.stdout.strip().splitlines()[-1])
    assert stats["fxgraph_cache_hit"] >= 1 and stats["fxgraph_cache_miss"] == 0, stats
    assert stats["autograd_cache_hit"] >= 1 and stats["autograd_cache_miss"] == 0, stats
    assert "loaded" in proc.stderr and "from its Inductor cache" in proc.stderr  # the candidate's log
    assert stats["ahead_live"] is False  # loaded ahead of its turn: the graphs ran nothing
    assert stats["same_identity"] is True  # the code compiled again is the screened build's
    # the turn's first call on the study's batch compiles nothing (an example of 32 rows and
    # batches of 16: before, every measuring process traced and compiled a second graph in its
    # turn, and the identity checked was the graph not measured)
    assert stats["compiled_in_turn"] == 0, stats
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-4, atol=1e-4)


def test_loading_uses_the_device_only_on_a_gpu_for_routes_that_compute_while_compiling():
    """A round's process loading ahead is pinned to the build cores and runs nothing: on the CPU
    that never touches the measured cores; on a GPU a freezing route folds its weights there
    while it compiles, even from the warm cache (``Backend.load_uses_device``)."""
    from gptuner_core.backends import load_backend
    from gptuner_core.routes import Route

    freezing = Route.parse("-inductor:freezing=on")
    assert not load_backend("torch", {"device": "cpu"}).load_uses_device(freezing)
    gpu = load_backend("torch", {"device": "cpu"})
    gpu.device = lambda: "cuda:0"  # no GPU here: the answer is the backend's own, for cuda:0
    assert gpu.load_uses_device(freezing)
    assert not gpu.load_uses_device(Route.parse("-torch:mode=reduce-overhead"))
    assert not load_backend("onnxruntime", {}).load_uses_device(Route.parse("-quant:mode=off"))


def test_freezing_loads_side_by_side_on_a_gpu_autotuning_loads_alone():
    """Loads that compute on the device (freezing folds the weights, the same every time) may
    run together in one turn; loads that time kernels there (autotuning: side by side they
    could choose other kernels than the screened build) load alone (``Backend.loads_side_by_side``)."""
    from gptuner_core.backends import load_backend
    from gptuner_core.routes import Route

    gpu = load_backend("torch", {"device": "cpu"})
    gpu.device = lambda: "cuda:0"  # no GPU here: the answer is the backend's own, for cuda:0
    assert gpu.loads_side_by_side(Route.parse("-inductor:freezing=on"))
    assert gpu.loads_side_by_side(Route.parse("-torch:precision=fp32 -inductor:freezing=on"))
    for timing in ("-inductor:freezing=on -inductor:max_autotune=on", "-torch:mode=max-autotune",
                   "-inductor:freezing=on -inductor:coordinate_descent_tuning=on"):
        assert not gpu.loads_side_by_side(Route.parse(timing)), timing
    assert not load_backend("torch", {"device": "cpu"}).loads_side_by_side(Route.parse("-inductor:freezing=on"))
    assert not load_backend("onnxruntime", {}).loads_side_by_side(Route.parse("-quant:mode=off"))


THREADS = r"""
import json, sys
from pathlib import Path
import torch
from gptuner_core.backends import BuildResult, load_backend
from gptuner_core.routes import Route
workdir = Path(sys.argv[1])
seen = workdir / "threads.txt"  # the factory appends the thread count it runs on
(workdir / "m.py").write_text(f'''import torch
def factory():
    with open({str(seen)!r}, "a") as out:
        out.write(f"{{torch.get_num_threads()}} ")
    raise LookupError("stop here")
''')
model = f"{workdir / 'm.py'}:factory"
backend = load_backend("torch", {"device": "cpu"})
info = {"model": model, "route": "-torch:precision=fp32", "device": "cpu"}
build = BuildResult(artifact=workdir / "generated", effective_route=info["route"], info=info)
torch.set_num_threads(2)
for step in (lambda: backend.build(Path(model), Route.parse(info["route"]), workdir / "a"),
             lambda: backend.load_ahead(build), lambda: backend.load(build)):
    try:
        step()
    except Exception as exc:
        assert "stop here" in str(exc), exc
print(json.dumps({"factory_threads": [int(t) for t in seen.read_text().split()],
                  "after": torch.get_num_threads()}))
"""


def test_builds_and_processes_loading_ahead_build_their_model_on_one_thread(tmp_path):
    """Builds and a round's processes run side by side, one per build core; with torch's
    default thread count each, ConvNeXt-Tiny's factory took 10-27 s instead of 0.5 s (issue 38,
    on the H100). There the factory runs on one thread and the count is restored for what
    follows; a process measuring at once (``load``) keeps its count."""
    proc = subprocess.run([sys.executable, "-c", THREADS, str(tmp_path)], capture_output=True,
                          text=True, cwd=REPO, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    facts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert facts == {"factory_threads": [1, 1, 2], "after": 2}

