"""The line of round processes started ahead (issue 38: a round never waits for compilation):
as many load at once as there are build cores, in the rounds' order, the rest as places free up;
a process whose turn comes before it started starts at once; cancel ends every one; a hint that
no longer names a started process cancels it (a finalist dropped), and one wanted again starts only
after its cancelled process has left its folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.engine.evaluate import round_prefetch
from gptuner_core.engine.evaluate.round_prefetch import RoundCall
from gptuner_core.engine.evaluate.round_prefetch import RoundPrefetch
from gptuner_core.engine.evaluate.round_prefetch import niceness
from gptuner_core.engine.evaluate.round_prefetch import room


class _Process:
    """Stands in for one forked round process: the line's policy is what is tested here (the
    real processes are in test_fork_server's round test)."""

    started: list[str] = []
    cancelled: list[str] = []
    loading: set[str] = set()  # cancelled, still loading (alive)

    warm_ups: list[str] = []  # in the order their warm-up was granted
    waiting: set[str] = set()  # loaded, waiting for their turn (the others still load)

    def __init__(self, ev, record, purpose, scale, build_cpus, target, nice=0, round=0) -> None:  # noqa: A002
        self.purpose, self.round, self.warming = purpose, round, False
        _Process.started.append(purpose)

    def loaded(self) -> bool:
        return self.purpose in _Process.waiting

    def warm_up(self, cpus) -> None:
        self.warming = True
        _Process.warm_ups.append(self.purpose)

    def warmed(self) -> bool:
        return True

    def result(self, cpus):
        return f"measured {self.purpose} on {cpus}"

    def cancel(self, *, wait: bool = True) -> None:
        _Process.cancelled.append(self.purpose)
        if not wait:
            _Process.loading.add(self.purpose)

    def alive(self) -> bool:
        return self.purpose in _Process.loading or self.purpose in _Process.waiting

    def join(self, timeout=None) -> None:
        _Process.loading.discard(self.purpose)


def _calls(rounds: int, per_round: int = 3, first: int = 0) -> list:
    return [RoundCall(None, f"r{r}_{n}", 0.25, r) for r in range(first, rounds) for n in range(per_round)]


def test_as_many_load_as_there_is_room_in_the_rounds_order(monkeypatch):
    monkeypatch.setattr(round_prefetch, "_Pending", _Process)
    _Process.started, _Process.cancelled = [], []
    line = RoundPrefetch(None, build_cpus=tuple(range(7)), measure_cpus=(14, 15), target="t")
    assert line.capacity == room(tuple(range(7))) == 7
    line.start(_calls(4))  # round 0 and every later round, as revalidate_sequential hints
    assert _Process.started == [f"r{r}_{n}" for r in range(3) for n in range(3)][:7]
    assert line.take("r0_0") == "measured r0_0 on (14, 15)"
    assert _Process.started[-1] == "r2_1"  # a place freed: the next in line loads
    assert line.take("r0_1") and line.take("r0_2")
    line.start(_calls(4, first=1))  # the next round's hint names nothing new
    assert len(_Process.started) == 10 and not _Process.cancelled
    assert line.take("r3_2") == "measured r3_2 on (14, 15)"  # its turn came first: started now
    line.cancel_all()
    assert sorted(_Process.cancelled) == sorted(set(_Process.started) - {"r0_0", "r0_1", "r0_2", "r3_2"})
    assert line.take("r3_0") is None  # cancelled: the caller measures it itself


def test_a_turn_first_warms_the_loaded_processes_of_its_round_and_the_next_together(monkeypatch):
    """Issue 38, item 2 (H100, session 53): a round's turn was its processes' first calls
    (cuDNN's and cuBLAS's set-up, CUDA graphs recorded: 0.2-0.7 s each on ConvNeXt-Tiny) as much
    as their samples, one after the other. The first turn of a round now grants a warm-up, the
    device shared and nothing measured, to every process of that round and of the next that has
    loaded; each then measures alone in its own turn, and a warmed process is not warmed again."""
    monkeypatch.setattr(round_prefetch, "_Pending", _Process)
    _Process.started, _Process.cancelled, _Process.warm_ups = [], [], []
    line = RoundPrefetch(None, build_cpus=tuple(range(12)), measure_cpus=(14, 15), target="t")
    line.start(_calls(4))
    assert [names for _, names in line.hints] == [tuple(sorted(c.purpose for c in _calls(4)))]  # kept
    _Process.waiting = {f"r{r}_{n}" for r in range(2) for n in range(3)} | {"r2_0"}  # r2_0 too: not its round
    assert line.take("r0_0") == "measured r0_0 on (14, 15)"
    assert _Process.warm_ups == ["r0_0", "r0_1", "r0_2", "r1_0", "r1_1", "r1_2"]
    assert line.take("r0_1") and line.take("r1_0")  # warm already: measured, not warmed again
    assert _Process.warm_ups == ["r0_0", "r0_1", "r0_2", "r1_0", "r1_1", "r1_2"]
    _Process.waiting = set()  # loading: its turn grants the device alone at once
    assert line.take("r2_1") == "measured r2_1 on (14, 15)" and "r2_1" not in _Process.warm_ups
    line.cancel_all()


def test_few_cores_still_load_two_ahead():
    assert room(()) == 2 and room((0,)) == 2 and room(tuple(range(14))) == 14


def test_a_hint_that_drops_a_started_process_cancels_it_and_frees_its_place(monkeypatch):
    """Screening hints the rounds of its leaders before re-validation starts; re-validation's own
    hint then names other finalists: the processes of the dropped one are told to exit (without
    waiting for their load) and the new finalist's load at once."""
    monkeypatch.setattr(round_prefetch, "_Pending", _Process)
    _Process.started, _Process.cancelled, _Process.loading = [], [], set()
    line = RoundPrefetch(None, build_cpus=tuple(range(4)), measure_cpus=(14, 15), target="t")

    def rounds(*numbers):
        return [RoundCall(None, f"r{r}_{n}", 0.25, r) for r in range(2) for n in numbers]

    line.start(rounds(0, 1))  # the default and the leader so far
    assert _Process.started == ["r0_0", "r0_1", "r1_0", "r1_1"]
    line.start(rounds(0, 2))  # screening's last candidate leads now
    assert sorted(_Process.cancelled) == ["r0_1", "r1_1"]
    assert _Process.started[4:] == ["r0_2", "r1_2"]
    line.start(rounds(0, 1))  # and the first leads again: its cancelled processes are still loading
    assert _Process.started[6:] == [] and sorted(_Process.cancelled) == ["r0_1", "r0_2", "r1_1", "r1_2"]
    assert line.take("r0_1") == "measured r0_1 on (14, 15)"  # waits for the old one, then starts
    assert _Process.started[6:] == ["r0_1"]  # r1_1's old process is still loading
    _Process.loading.discard("r1_1")  # it has gone
    assert line.take("r0_0") == "measured r0_0 on (14, 15)"
    assert _Process.started[6:] == ["r0_1", "r1_1"]  # the place went to it
    line.cancel_all()
    assert not _Process.loading


def test_the_round_about_to_run_loads_first_on_the_cpu(monkeypatch):
    """Issue 38: 12 round processes loading side by side took 40 s each on ConvNeXt, round 0's
    among them. Each loads at a niceness that grows with its round's distance from the hint's
    first round, all below the builds (0); a later hint keeps the started ones as they are."""
    monkeypatch.setattr(round_prefetch, "_Pending", _Process)
    _Process.started, _Process.cancelled, _Process.loading = [], [], set()
    line = RoundPrefetch(None, build_cpus=tuple(range(14)), measure_cpus=(14, 15), target="t")
    line.start(_calls(4))
    assert [niceness(k) for k in range(7)] == [2, 6, 10, 14, 18, 19, 19]
    assert {p: line.nice[p] for p in ("r0_0", "r0_2", "r1_0", "r2_1", "r3_2")} == {
        "r0_0": 2, "r0_2": 2, "r1_0": 6, "r2_1": 10, "r3_2": 14}
    line.take("r0_0"), line.take("r0_1"), line.take("r0_2")
    line.start(_calls(6, first=1))  # round 1 is next: rounds 4 and 5 queue below round 3
    assert line.nice["r1_0"] == 6 and line.nice["r4_0"] == 14 and line.nice["r5_1"] == 18
    line.cancel_all()


def test_a_route_loading_on_the_device_starts_its_next_rounds_in_its_turn(monkeypatch):
    """The hint's ``in_turn`` calls (a route whose loading runs on the device) never load ahead;
    taking one starts it and the next three in line at the builds' priority, and the turn is
    given once all four have loaded; the later rounds then take theirs as they are."""
    monkeypatch.setattr(round_prefetch, "_Pending", _Process)
    _Process.started, _Process.cancelled, _Process.loading = [], [], set()
    asked: list[str] = []  # each process's answer to "loaded?": not yet, twice in all

    def loaded(self) -> bool:
        asked.append(self.purpose)
        return len(asked) > 2

    monkeypatch.setattr(_Process, "loaded", loaded, raising=False)
    line = RoundPrefetch(None, build_cpus=tuple(range(14)), measure_cpus=(14, 15), target="t")
    ahead = [RoundCall(None, f"r{r}_0", 0.25, r) for r in range(6)]
    in_turn = [RoundCall(None, f"r{r}_1", 0.25, r) for r in range(6)]
    line.start(ahead, in_turn)
    assert _Process.started == [f"r{r}_0" for r in range(6)]  # the device's route waits for a turn
    assert line.take("r0_0") == "measured r0_0 on (14, 15)" and not asked
    assert line.take("r0_1") == "measured r0_1 on (14, 15)"
    assert _Process.started[6:] == ["r0_1", "r1_1", "r2_1", "r3_1"]
    assert asked == ["r0_1", "r0_1", "r0_1", "r1_1", "r2_1", "r3_1"]  # the turn waited for all four
    assert {line.nice[p] for p in _Process.started[6:]} == {0}
    assert line.take("r1_1") == "measured r1_1 on (14, 15)"
    assert _Process.started[10:] == []  # loaded in round 0's turn
    line.start(ahead[1:], in_turn[2:3])  # decided sooner: round 3's process is not wanted
    assert _Process.cancelled == ["r3_1"]
    line.cancel_all()


def test_the_default_loads_its_first_look_while_others_build_and_the_finalists_once_all_are_built():
    """``start_rounds_ahead``: the default route's first four rounds (every study measures it in
    each) while the others build; once all are built, every round of the default and of the
    top-k finalists as screening ranks them, round by round."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.decide.finish import start_rounds_ahead
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState
    from gptuner_core.records import LatencyStats

    def rec(n: int, ms: float) -> CandidateRecord:
        lat = LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms,
                           cv=0.0, ci_low_ms=ms, ci_high_ms=ms, n_samples=1)
        return CandidateRecord(number=n, requested_route=f"-k={n}", state=CandidateState.COMPLETE, latency=lat)

    class Evaluator:
        hints: list[list[RoundCall]] = []

        def prefetching(self) -> bool:
            return True

        def prefetch_rounds(self, calls: list[RoundCall]) -> None:
            self.hints.append(calls)

    ev, cfg = Evaluator(), StudyConfig(model="m.onnx", revalidate_top_k=2, revalidate_rounds=12)
    history = [rec(0, 3.0), rec(1, 1.0), rec(2, 2.5), rec(3, 1.5)]
    start_rounds_ahead(cfg, ev, history[:1], settled=False)
    assert [(c.purpose, c.round) for c in ev.hints[-1]] == [(f"revalidation/r{r}_00000", r) for r in range(4)]
    start_rounds_ahead(cfg, ev, history, settled=True)
    assert [(c.record.number, c.round) for c in ev.hints[-1]] == [(n, r) for r in range(12) for n in (0, 1, 3)]
    assert {c.scale for c in ev.hints[-1]} == {0.25}
    # candidates still waiting for their result get the processes of the first look too (rounds
    # 0-3), from the build their process wrote: one measured last might be a finalist, and its
    # later rounds would wait for their load otherwise (the H100, session 54: round 1 waited
    # 1.3-3.1 s for a finalist's process started at its result); the finalists' process of a
    # round loads before theirs; one that wrote no build is left out
    ev.built_record = lambda n, route: rec(n, 9.0) if n == 5 else None
    start_rounds_ahead(cfg, ev, history, settled=True, waiting=[(4, "-k=4"), (5, "-k=5")])
    assert [(c.record.number, c.round) for c in ev.hints[-1]] == [(0, 0), (1, 0), (3, 0), (5, 0)] + [
        (n, r) for r in range(1, 12) for n in ((0, 1, 3, 5) if r < 4 else (0, 1, 3))]
    # before the default's result, from its build: its first look while others build, then
    # round 0 of every candidate built (no finalist is known yet) and the default's later rounds
    ev.built_record = lambda n, route: rec(n, 9.0).replace(latency=None) if n in (0, 5) else None
    start_rounds_ahead(cfg, ev, [], settled=False, waiting=[(0, "-k=0"), (4, "-k=4"), (5, "-k=5")])
    assert [(c.record.number, c.round) for c in ev.hints[-1]] == [(0, r) for r in range(4)]
    start_rounds_ahead(cfg, ev, [], settled=True, waiting=[(0, "-k=0"), (4, "-k=4"), (5, "-k=5")])
    assert [(c.record.number, c.round) for c in ev.hints[-1]] == [(0, 0), (5, 0)] + [
        (n, r) for r in range(1, 12) for n in ((0, 5) if r < 4 else (0,))]
    # nothing while the default has no build, nor once it failed
    hinted = len(ev.hints)
    start_rounds_ahead(cfg, ev, [], settled=True, waiting=[(4, "-k=4"), (5, "-k=5")])
    start_rounds_ahead(cfg, ev, [rec(0, 3.0).replace(state=CandidateState.CRASHED, latency=None)], settled=True)
    assert len(ev.hints) == hinted


def test_a_process_started_ahead_loads_below_the_builds_and_measures_at_normal_priority(tmp_path):
    """The child's side (``engine.process.turn``): niceness ``nice`` while it loads, every
    thread back to 0 with its turn where the system allows it (root here, or CAP_SYS_NICE)."""
    import os
    import subprocess
    import sys

    code = ("import os, threading\n"
            "from gptuner_core.engine.process import turn\n"
            "turn.lower_priority(6)\n"
            "t = threading.Thread(target=lambda: __import__('time').sleep(1)); t.start()\n"
            "low = os.getpriority(os.PRIO_PROCESS, 0)\n"
            "tasks = [int(x) for x in os.listdir('/proc/self/task')]\n"
            "turn.restore_priority()\n"
            "print(low, sorted({os.getpriority(os.PRIO_PROCESS, x) for x in tasks}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(tmp_path))
    low, after = out.stdout.split(" ", 1)
    assert int(low) == 6
    assert after.strip() in (("[0]",) if os.geteuid() == 0 else ("[0]", "[6]")), out.stdout


OFF = "enable_mem_pattern=off"  # the route these studies' onnxruntime is told loads on the device


def _on_device_study(tmp_path: Path, monkeypatch, rounds: int, *, side_by_side: bool):
    """A real study of two onnxruntime routes, 2 candidates and ``rounds`` rounds with overlap
    on, whose backend is told that the ``OFF`` route loads on the device (and, ``side_by_side``,
    that its loads may run together). Returns the study folder and the routes by number."""
    import json

    from gptuner_core.backends.onnxruntime.backend import OnnxRuntimeBackend
    from gptuner_core.cli import main
    from gptuner_core.storage import open_store

    from .conftest import QUICK
    from .conftest import REPO

    def on_device(self, route) -> bool:
        return OFF in str(route)

    monkeypatch.setattr(OnnxRuntimeBackend, "load_uses_device", on_device, raising=False)
    if side_by_side:
        monkeypatch.setattr(OnnxRuntimeBackend, "loads_side_by_side", on_device, raising=False)
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("GPTUNER_OVERLAP", "on")
    study = tmp_path / "rv"
    args = [
        "tune", str(REPO / "assets/cnn_digits.onnx"), "--backend", "onnxruntime",
        "--dataset", str(REPO / "assets/cnn_digits_eval.npz"),
        "--expr", "-ort:enable_mem_pattern=[on|off]", "--search", "full", "--metric", "cos",
        "--epsilon", "0.01", "--batch-size", "8", "--revalidate-top-k", "1",
        "--revalidate-rounds", str(rounds), "--min-effect", "0.5", "--study", str(study), "--quiet",
    ] + [f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]
    assert main(args) in (0, 3)
    with open_store(study, readonly=True) as store:
        return study, {c.number: c.requested_route for c in store.candidates()}


@pytest.mark.slow
def test_a_route_whose_loading_runs_on_the_device_loads_in_its_turn(tmp_path, monkeypatch):
    """Found on the H100 (2026-12-06, issue 38's effect studies): a round's process loading ahead
    runs outside the device turn, and a torch route with ``freezing`` runs kernels on the GPU
    while it compiles (the weights are folded there), so the route screened 0.81-0.89x of the
    default with its round processes loading beside it, and 1.075x alone. A route whose loading
    uses the device (``Backend.load_uses_device``) is not started ahead: its round processes
    load in their turn; the other routes' still load ahead and wait."""
    study, routes = _on_device_study(tmp_path, monkeypatch, 2, side_by_side=False)
    waited = {}
    for folder in sorted((study / "revalidation").iterdir()):
        number = int(folder.name.rsplit("_", 1)[-1])
        phases = [line.split()[0] for line in (folder / "phase").read_text().splitlines()]
        waited[folder.name] = ("wait" in phases, OFF in routes[number])
    assert {on_device for _, on_device in waited.values()} == {True, False}, waited
    assert all(ahead != on_device for ahead, on_device in waited.values()), waited


@pytest.mark.slow
def test_a_route_that_loads_on_the_device_loads_its_next_rounds_in_one_turn(tmp_path, monkeypatch):
    """Issue 38's effect studies on the H100 (session 50): a freezing route's processes loaded in
    their turn, so each of its rounds took 12-33 s for about 2 s measured, and 10 studies did not
    fit a session's device time. Where its loads may run side by side
    (``Backend.loads_side_by_side``: freezing computes, autotuning times), its turn in round 0
    starts its processes of rounds 0-3 together and measures once all four have loaded; nothing
    is measured while they load, and rounds 1-3 find theirs loaded (each still its own process)."""
    from gptuner_core.storage import open_store

    study, routes = _on_device_study(tmp_path, monkeypatch, 4, side_by_side=True)
    (off,) = [n for n, route in routes.items() if OFF in route]
    with open_store(study, readonly=True) as store:
        (event,) = [e.payload for e in store.events("revalidation")]
    assert event.get("rounds", 0) >= 4, event  # the first look: four rounds
    phases = {f.name: [(line.split()[0], float(line.split()[1])) for line in (f / "phase").read_text().splitlines()]
              for f in (study / "revalidation").iterdir() if (f / "phase").exists()}
    batch = [f"r{r}_{off:05d}" for r in range(4)]
    assert all("wait" in dict(phases[p]) for p in batch), {p: phases[p] for p in batch}  # loaded, then waited
    began = min(dict(phases[p])["start"] for p in batch)
    loaded = max(dict(phases[p])["wait"] for p in batch)
    assert dict(phases[batch[0]])["measure"] >= loaded  # its turn came once all four had loaded
    measured_meanwhile = [n for n, marks in phases.items() if began <= dict(marks).get("measure", -1) < loaded]
    assert not measured_meanwhile, measured_meanwhile  # the device was held: nothing measured


def test_a_process_loading_ahead_exits_when_cancelled_not_once_loaded(tmp_path):
    """H100 timelines (2026-12-06): round processes cancelled while they loaded (candidates that
    did not become finalists) loaded on for 23 s beside the finalists' processes. The child's
    watcher (``turn.exit_when_cancelled``) ends it at the cancel; a grant stops the watcher."""
    import json
    import subprocess
    import sys
    import time

    from gptuner_core.engine.process.turn import TURN

    code = ("import sys, time\nfrom pathlib import Path\n"
            "from gptuner_core.engine.process import turn\n"
            "turn.exit_when_cancelled(Path(sys.argv[1]), poll_s=0.01)\n"
            "print('loading', flush=True)\n"
            "time.sleep(float(sys.argv[2]))  # a long compile\n"
            "print('loaded', flush=True)\n")
    cancelled, granted = tmp_path / "c", tmp_path / "g"
    for folder in (cancelled, granted):
        folder.mkdir()
    procs = {folder: subprocess.Popen([sys.executable, "-c", code, str(folder), seconds],
                                      stdout=subprocess.PIPE, text=True)
             for folder, seconds in ((cancelled, "60"), (granted, "1.5"))}
    for proc in procs.values():
        assert proc.stdout.readline().strip() == "loading"
    t0 = time.monotonic()
    (cancelled / TURN).write_text(json.dumps({"cancel": True}))
    (granted / TURN).write_text(json.dumps({"cpus": [0]}))
    assert procs[cancelled].wait(timeout=30) == 0
    assert time.monotonic() - t0 < 30
    assert procs[cancelled].stdout.read() == ""  # it never finished loading
    assert procs[granted].wait(timeout=30) == 0
    assert procs[granted].stdout.read().strip() == "loaded"  # a grant leaves it alone
