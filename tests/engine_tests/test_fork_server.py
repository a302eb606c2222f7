"""The fork server of CUDA backends (the ``torch`` launcher) and builds overlapped with
measurement in one process, with real processes on the CPU build of torch."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import pytest

from gptuner_core.cli import main
from gptuner_core.engine.process import launcher
from gptuner_core.engine.process.isolation import run_isolated
from gptuner_core.records import CandidateState
from gptuner_core.storage import open_store

from .conftest import QUICK
from .conftest import REPO


REPORT = "gptuner_core.testing.child_targets:report"
MISBEHAVE = "gptuner_core.testing.child_targets:misbehave"
TIMEOUTS = {"build": 120.0, "measure": 60.0}
MODEL = REPO / "assets" / "torch_digits_cnn.py"


def _module_of(path: Path) -> str:
    return "_gptuner_torch_model_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]


@pytest.mark.slow
def test_torch_jobs_fork_from_a_launcher_holding_torch_and_the_model_never_cuda(tmp_path, fresh_launcher):
    job = {"backend": "torch", "backend_options": {"device": "cuda:0"}, "model": f"{MODEL}:factory",
           "modules": ["torch", "torch._inductor.compile_fx", _module_of(MODEL), "onnx"], "primed": True}
    out = run_isolated(REPORT, job, tmp_path / "a", timeouts=TIMEOUTS)
    assert out.status == "ok", out.error
    server = launcher.shared("torch")
    seen = out.result
    assert seen["ppid"] == server.pid != os.getpid()
    # imported before the fork: torch, Inductor and the user's model module; CUDA never; not
    # onnx, which no torch candidate uses (its import delayed every study's first fork)
    assert seen["modules"] == sorted(job["modules"][:3])
    assert seen["cuda_initialized"] is False
    # the keys every compile hashes first (torch's and Triton's sources) come computed
    assert seen["primed"] == {"torch_key": True, "triton_key": True}
    assert len(os.listdir(f"/proc/{server.pid}/task")) == 1
    assert "libcuda" not in Path(f"/proc/{server.pid}/maps").read_text()
    # a second child is forked fresh from the same server; a CPU-only job from the cpu launcher
    again = run_isolated(REPORT, job, tmp_path / "b", timeouts=TIMEOUTS).result
    assert again["ppid"] == server.pid and again["pid"] != seen["pid"] and again["state"] == "initial"
    cpu = run_isolated(REPORT, {"backend": "onnxruntime"}, tmp_path / "c", timeouts=TIMEOUTS).result
    assert cpu["ppid"] == launcher.shared().pid != server.pid
    # isolation unchanged: a crash in a forked torch child is that candidate's state
    crash = run_isolated(MISBEHAVE, {**job, "mode": "segfault"}, tmp_path / "d", timeouts=TIMEOUTS)
    assert crash.status == "crashed" and "SIGSEGV" in crash.error
    assert launcher.shared("torch").pid == server.pid


@pytest.mark.slow
def test_a_model_that_makes_the_server_unsafe_gets_spawned_children(tmp_path, fresh_launcher, caplog,
                                                                    monkeypatch):
    """A model module that starts a thread when imported: the server refuses to fork from then
    on, the child is spawned and the reason is logged."""
    from gptuner_core.engine.process import isolation

    monkeypatch.setattr(isolation, "_warned", set())  # each reason is logged once per process
    model = tmp_path / "threaded_model.py"
    model.write_text("import threading, time\n"
                     "threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
                     "def factory():\n    raise RuntimeError('not called')\n")
    job = {"backend": "torch", "model": f"{model}:factory"}
    with caplog.at_level(logging.WARNING):
        out = run_isolated(REPORT, job, tmp_path / "a", timeouts=TIMEOUTS)
    assert out.status == "ok", out.error
    assert out.result["ppid"] == os.getpid()
    assert "the launcher has 2 threads" in caplog.text


def _faulty_tune(study: Path, monkeypatch, overlap: str, expr: str, workers: int, *extra: str,
                 measure: dict | None = None) -> list[str]:
    """``gptuner tune`` arguments of a faulty-backend study of the digits CNN (its own lock
    folder beside the study, overlap set as given; ``measure``: the sampling, QUICK unless said)."""
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(study.parent / "locks"))
    monkeypatch.setenv("GPTUNER_OVERLAP", overlap)
    return [
        "tune", str(REPO / "assets/cnn_digits.onnx"),
        "--backend", "gptuner_core.testing.faulty_backend:FaultyBackend",
        "--backend-option", "device_free_builds=true",
        "--dataset", str(REPO / "assets/cnn_digits_eval.npz"),
        "--expr", expr, "--search", "full", "--metric", "cos", "--epsilon", "0.01", "--batch-size", "8",
        *extra, "--study", str(study), "--quiet", "--build-workers", str(workers),
    ] + [f"--measure-option={k}={json.dumps(v)}" for k, v in (measure or QUICK).items()]


def _tune(study: Path, monkeypatch, overlap: str, workers: int) -> list:
    args = _faulty_tune(study, monkeypatch, overlap, "-fault:label=[a|b] -fault:sleep_ms=[0|1500|200]",
                        workers, "--revalidate-top-k", "0")
    assert main(args) == 0
    with open_store(study, readonly=True) as store:
        return store.candidates()


def _phases(study: Path, number: int) -> list[tuple[str, float]]:
    text = (study / "candidates" / f"{number:05d}" / "phase").read_text()
    return [(name, float(t)) for name, t in (line.split() for line in text.splitlines())]


@pytest.mark.slow
def test_overlap_builds_beside_a_measurement_and_measures_in_the_building_process(tmp_path, monkeypatch):
    seq = _tune(tmp_path / "seq", monkeypatch, "off", 1)
    par = _tune(tmp_path / "par", monkeypatch, "on", 2)
    assert [(r.requested_route, r.state) for r in par] == [(r.requested_route, r.state) for r in seq]
    spans = {}
    for r in par:
        marks = _phases(tmp_path / "par", r.number)
        names = [n for n, _ in marks]
        if r.state is CandidateState.DUPLICATE:
            continue
        # one process: it started once, built, waited for the device, then measured
        tl = r.extra["timeline"]
        if "-fault:sleep_ms=0" in r.requested_route:  # its build uses the device: held throughout
            assert names[:4] == ["start", "build", "wait", "measure"], (r.number, names)
            assert tl["measure_start"] <= dict(marks)["build"], (r.number, tl, marks)
        else:  # the device shared for its first calls, then alone for the samples
            assert names[:6] == ["start", "build", "wait", "warmup", "ready", "measure"], (r.number, names)
        spans[r.number] = (dict(marks), tl)
    for a, (_ma, ta) in spans.items():
        for b, (_mb, tb) in spans.items():
            if a < b:  # measurements never overlap each other
                assert ta["measure_end"] <= tb["measure_start"] or tb["measure_end"] <= ta["measure_start"]
    # a device-free build (sleep_ms > 0) ran while another candidate held the device: the 1.5 s
    # build is proposed second (label varies slowest), so it starts beside the default route and
    # sleeps through the default's measurement and the 200 ms build's, however late the processes
    # start (proposed last, it could start after every other measurement had ended)
    beside = [(a, b) for a, (ma, ta) in spans.items() for b, (mb, tb) in spans.items()
              if a != b and mb["build"] < ta["measure_end"] and mb["wait"] > ta["measure_start"]]
    t0 = min(m["start"] for m, _ in spans.values())
    seen = {n: {"build": round(m["build"] - t0, 2), "wait": round(m["wait"] - t0, 2),
                "measure": (round(t["measure_start"] - t0, 2), round(t["measure_end"] - t0, 2))}
            for n, (m, t) in spans.items()}
    assert beside, seen


@pytest.mark.slow
def test_rounds_start_together_and_measure_one_at_a_time_with_their_split(tmp_path, monkeypatch):
    """Overlap on: each re-validation round's processes start together, load, wait for their
    turn, and measure one at a time in the round's order; the event carries the seconds per
    round split into start-up, compile and measure."""
    study = tmp_path / "rv"
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("GPTUNER_OVERLAP", "on")
    args = [
        "tune", str(REPO / "assets/cnn_digits.onnx"), "--backend", "onnxruntime",
        "--dataset", str(REPO / "assets/cnn_digits_eval.npz"), "--expr", "-ort:enable_mem_pattern=[on|off]",
        "--search", "full", "--metric", "cos", "--epsilon", "0.01", "--batch-size", "8",
        "--revalidate-top-k", "1", "--revalidate-rounds", "3", "--min-effect", "0.5",
        "--keep-artifacts", "all", "--study", str(study), "--quiet",
    ] + [f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]
    assert main(args) in (0, 3)
    with open_store(study, readonly=True) as store:
        (event,) = [e.payload for e in store.events("revalidation")]
    times = event["round_times"]
    assert [r["round"] for r in times] == list(range(len(times))) and times
    assert all(r["processes"] == 2 and r["measure"] > 0 for r in times)
    # the timed part's samples apart from its first calls and hand-over (where a turn goes)
    assert all(0 < r["sampling"] <= r["measure"] for r in times), times
    windows, warm = [], []
    for folder in sorted((study / "revalidation").iterdir()):
        marks = dict(_marks(folder))
        names = list(marks)
        # loaded ahead, then either warmed up with the other loaded processes (the device
        # shared, nothing measured) and measured alone, or measured in one turn
        assert names[:3] == ["start", "build", "wait"], (folder.name, marks)
        assert names[3:6] == ["warmup", "ready", "measure"] or names[3] == "measure", (folder.name, marks)
        if "warmup" in marks:
            warm.append((marks["warmup"], marks["ready"]))
        windows.append((marks["measure"], (folder / "result.json").stat().st_mtime))
    windows.sort()
    for (_, a1), (b0, _) in zip(windows, windows[1:], strict=False):
        assert a1 <= b0, windows  # one measurement at a time (the next turn after the result)
    assert len(warm) >= 2, warm  # a round's processes warmed up together
    from gptuner_core.engine.evaluate.round_prefetch import read_hints

    hints = read_hints(study)  # when each round's processes were asked for, kept for the benchmarks
    assert hints and any("r1_00000" in names for _, names in hints), hints
    for w0, w1 in warm:  # and never while another measured
        assert all(w1 <= m0 or w0 >= m1 for m0, m1 in windows), (w0, w1, windows)


def _marks(folder: Path) -> list[tuple[str, float]]:
    lines = (folder / "phase").read_text().splitlines()
    return [(name, float(t)) for name, t in (line.split() for line in lines)]


@pytest.mark.slow
def test_a_preload_that_starts_a_thread_is_left_out_of_a_new_server(tmp_path, monkeypatch, fresh_launcher, caplog):
    """The preload stops at the module after which the server may not fork; a new server is
    started with the modules before it, and forks."""
    from gptuner_core.engine.process import launcher_main

    (tmp_path / "probe_starts_a_thread.py").write_text(
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    preload = ("numpy", "torch", "probe_starts_a_thread", "gptuner_core.engine.process.child")
    monkeypatch.setitem(launcher_main.KINDS, "torch", (preload, launcher_main.KINDS["torch"][1]))
    with caplog.at_level(logging.WARNING):
        out = run_isolated(REPORT, {"backend": "torch", "modules": ["torch"]}, tmp_path / "a", timeouts=TIMEOUTS)
    server = launcher.shared("torch")
    assert server.preload == ("numpy", "torch") and not server.unsafe
    assert out.status == "ok" and out.result["ppid"] == server.pid and out.result["modules"] == ["torch"]
    assert "cannot fork after importing probe_starts_a_thread" in caplog.text


#: NVML as the launcher met it on the H200: initialising it starts a thread that stays
_FAKE_NVML = r"""
#include <pthread.h>
#include <string.h>
#include <unistd.h>
static int started = 0; static pthread_t th;
static void *run(void *a) { for (;;) sleep(60); return 0; }
int nvmlInit(void) { if (!started) { started = 1; pthread_create(&th, 0, run, 0); } return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(int *n) { *n = 1; return 0; }
int nvmlDeviceGetHandleByIndex_v2(int i, void **h) { *h = (void *)1; return 0; }
int nvmlDeviceGetUUID(void *h, char *buf, int len) { strncpy(buf, "GPU-fake", len); return 0; }
"""


@pytest.mark.slow
def test_torch_asking_nvml_while_the_server_preloads_does_not_drop_the_module(tmp_path, monkeypatch, fresh_launcher):
    """PyTorch's fork-safe CUDA check asks NVML, whose initialisation leaves a thread: on the H200
    importing Inductor did so and the server dropped Inductor from its preload (each child then
    imported it, about a second). The server has torch's NVML answers from a throwaway
    interpreter while it preloads: it keeps the module and forks; children ask NVML themselves."""
    import shutil
    import subprocess

    if not shutil.which("gcc"):
        pytest.skip("needs gcc to build the stand-in NVML library")
    (tmp_path / "nvml.c").write_text(_FAKE_NVML)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libnvidia-ml.so.1"), str(tmp_path / "nvml.c"),
                    "-lpthread"], check=True)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(tmp_path))
    (tmp_path / "probe_asks_nvml.py").write_text(
        "import torch.cuda\nCOUNT = torch.cuda._raw_device_count_nvml()\nUUIDS = torch.cuda._raw_device_uuid_nvml()\n")
    from gptuner_core.engine.process import launcher_main
    from gptuner_core.engine.process.nvml import nvml_answers

    assert nvml_answers() == (1, ["GPU-fake"])  # as torch itself answers
    monkeypatch.syspath_prepend(str(tmp_path))
    preload = ("numpy", "torch", "probe_asks_nvml", "gptuner_core.engine.process.child")
    monkeypatch.setitem(launcher_main.KINDS, "torch", (preload, launcher_main.KINDS["torch"][1]))
    out = run_isolated(REPORT, {"backend": "torch", "modules": ["probe_asks_nvml"]}, tmp_path / "a",
                       timeouts=TIMEOUTS)
    server = launcher.shared("torch")
    assert server.preload == preload and not server.unsafe
    assert out.status == "ok" and out.result["ppid"] == server.pid
    assert out.result["modules"] == ["probe_asks_nvml"]  # the child found it imported


@pytest.mark.slow
def test_round_processes_start_while_the_last_candidates_are_still_screened(tmp_path, monkeypatch):
    """Issue 38: round 0 waited for its processes' compile. With several candidates in flight,
    once every candidate has been built the processes of the default's rounds (and the leader's
    so far) start while the last candidates still measure one at a time (each measures for
    about a second here: 40 ms per call): round 0 began before the re-validation did, and the
    study ends with the same kind of verdict and no process left waiting."""
    study = tmp_path / "ahead"
    args = _faulty_tune(study, monkeypatch, "on", "-fault:tie=[slow|x|y] -fault:call_ms=40 -fault:sleep_ms=100", 4,
                        "--revalidate-top-k", "1", "--revalidate-rounds", "2", "--drift-every", "0",
                        "--profile-runs", "0")
    assert main(args) in (0, 3)
    with open_store(study, readonly=True) as store:
        (event,) = [e.payload for e in store.events("revalidation")]
        assert store.winner() is not None
    first = event["round_times"][0]
    # its processes were started before the re-validation began: the round spans more than
    # what it added to the re-validation
    assert first["span"] > first["wall"], event["round_times"]
    waiting = [f.name for f in (study / "revalidation").iterdir()
               if (f / "phase").exists() and not (f / "result.json").exists()
               and "cancel" not in ((f / "turn").read_text() if (f / "turn").exists() else "")]
    assert not waiting, waiting  # every process started ahead was measured or told to exit


def _release_once_round_zero_starts(study: Path, release: Path, within_s: float):
    """A watcher thread that touches ``release`` once the default's round-0 process has started
    (its ``phase`` file), or after ``within_s``; its list says which came first."""
    import threading
    import time

    seen: list[str] = []

    def watch() -> None:
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline and not (study / "revalidation" / "r0_00000" / "phase").exists():
            time.sleep(0.02)
        seen.append("round 0 started" if time.monotonic() < deadline else "timed out")
        release.touch()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher, seen


@pytest.mark.slow
def test_the_defaults_round_processes_load_while_other_candidates_still_build(tmp_path, monkeypatch):
    """Issue 38: round 0 waited for its processes' compile when they started only once every
    candidate had been built. The default route's processes of the first look start as soon as
    it is committed: here the other candidates' builds are held until the default's round-0
    process has started (``hold_builds``), which it never would without that; the study then
    ends with a verdict and the default's processes loaded below the builds' priority."""
    study, release = tmp_path / "early", tmp_path / "release"
    args = _faulty_tune(study, monkeypatch, "on", "-fault:tie=[slow|x] -fault:sleep_ms=[0|100]", 4,
                        "--backend-option", f"hold_builds={release}", "--revalidate-top-k", "1",
                        "--revalidate-rounds", "2", "--drift-every", "0", "--profile-runs", "0")
    # the builds go on either way (after 90 s): the test says which came first
    watcher, seen = _release_once_round_zero_starts(study, release, 90)
    assert main(args) in (0, 3)
    watcher.join()
    assert seen == ["round 0 started"], "the default's round-0 process waited for the other builds"
    with open_store(study, readonly=True) as store:
        assert store.winner() is not None and len(store.candidates()) == 4
    turns = {f.name: json.loads((f / "job.json").read_text())["turn"] for f in (study / "revalidation").iterdir()}
    assert turns["r0_00000"]["nice"] == 2 and turns["r1_00000"]["nice"] == 6, turns  # below the builds
    _a_build_written_before_the_result_is_enough_to_measure_it_again(study)


@pytest.mark.slow
def test_the_defaults_round_processes_start_from_its_build_before_its_result(tmp_path, monkeypatch):
    """Issue 38 on the H100: candidates that build side by side end their builds together, and
    the default measures first, so round 0's processes started only after its result (ResNet-50:
    all built at 15.8 s, the default's result at 18.4 s, round 0 loaded by 25.6 s while the
    device was free from 23.6 s). Here the default's first call is held (``hold_first_calls``)
    until its round-0 process has started: it never would if that process waited for the
    default's result (the hold gives up after 30 s, the watcher after 25 s)."""
    study, release = tmp_path / "from_build", tmp_path / "release"
    args = _faulty_tune(study, monkeypatch, "on", "-fault:tie=[slow|x] -fault:sleep_ms=100 -fault:first_ms=1500", 4,
                        "--backend-option", f"hold_first_calls={release}", "--revalidate-top-k", "1",
                        "--revalidate-rounds", "2", "--drift-every", "0", "--profile-runs", "0")
    watcher, seen = _release_once_round_zero_starts(study, release, 25)  # the hold gives up at 30 s
    assert main(args) in (0, 3)
    watcher.join()
    assert seen == ["round 0 started"], "the default's round-0 process waited for its result"
    with open_store(study, readonly=True) as store:
        assert store.winner() is not None and len(store.candidates()) == 2
    assert (study / "revalidation" / "r0_00000" / "result.json").exists()  # it measured round 0


def _a_build_written_before_the_result_is_enough_to_measure_it_again(study: Path) -> None:
    """Each candidate's process wrote its build before waiting for the device
    (``engine.process.turn.BUILT``): the evaluator's ``built_record`` of it names the artifact
    the candidate's result names, and a round's process measures it from that record alone
    (``finish.start_rounds_ahead`` starts round 0 of candidates still waiting from it)."""
    from gptuner_core.backends import load_backend
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.evaluate.evaluator import IsolatedEvaluator
    from gptuner_core.engine.evaluate.evaluator import StudyContext
    from gptuner_core.engine.files.inputs import open_inputs
    from gptuner_core.engine.files.workspace import StudyWorkspace

    ws = StudyWorkspace(study)
    with open_store(study, readonly=True) as store:
        cfg = StudyConfig.from_json(store.config())
        recs = store.candidates()
        sha, axes = store.get_meta("inputs_sha256"), store.get_meta("batch_axes")
    specs = load_backend(cfg.backend, cfg.backend_options).input_specs(Path(cfg.model))
    evaluator = IsolatedEvaluator(StudyContext(config=cfg, workspace=ws,
                                               inputs=open_inputs(ws, cfg, specs, sha, axes)))
    from gptuner_core.engine.process.turn import BUILT

    # those that built beside others and waited for the device (a build on the device measures
    # at once, in the same hold)
    kept = [r for r in recs if r.artifact_path and Path(r.artifact_path).exists()
            and (ws.candidate_dir(r.number) / BUILT).exists()]
    assert kept, "no waiting candidate's build written and kept"
    for rec in kept:
        early = evaluator.built_record(rec.number, rec.requested_route)
        assert early is not None and early.artifact_path == rec.artifact_path
        assert early.effective_route == rec.effective_route
    res = evaluator.remeasure(early, "revalidation/check_early", 0.25)
    assert res.ok and res.samples_ms, res.error
    assert evaluator.built_record(99, "-fault:tie=x") is None  # nothing written: nothing to start

