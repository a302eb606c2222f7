"""A candidate gives the device back before its CPU-only finish (outputs, task metric, the
profile's parsing), so the next candidate measures meanwhile (``engine.process.turn.leave_device``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gptuner_core.cli import main
from gptuner_core.records import CandidateState
from gptuner_core.storage import open_store

from .conftest import QUICK
from .conftest import wait_for
from .test_fork_server import _faulty_tune


SLOW_METRIC = '''
import time


def slow(outputs, labels):
    time.sleep(2.0)  # CPU-side work after the device: the next candidate should not wait for it
    return 1.0
'''

#: two thread counts, two build times: four candidates beside the default
EXPR = "-ort:threads=[0|1] -fault:sleep_ms=[100|300]"


def _phases(study: Path, number: int) -> dict[str, float]:
    text = (study / "candidates" / f"{number:05d}" / "phase").read_text()
    return {name: float(t) for name, t in (line.split() for line in text.splitlines())}


@pytest.mark.slow
def test_the_next_candidate_measures_while_the_last_one_finishes_on_the_cpu(tmp_path, monkeypatch):
    metric = tmp_path / "slow_metric.py"
    metric.write_text(SLOW_METRIC)
    study = tmp_path / "s"
    args = _faulty_tune(study, monkeypatch, "on", EXPR, 3,
                        "--task-metric", f"{metric}:slow", "--revalidate-top-k", "0")
    assert main(args) == 0
    with open_store(study, readonly=True) as store:
        recs = [r for r in store.candidates() if r.state is CandidateState.COMPLETE]
    assert len(recs) >= 2, [(r.number, r.state, r.error) for r in recs]
    spans = []
    for r in recs:
        marks, tl = _phases(study, r.number), r.extra["timeline"]
        # the device part came first, then the report, on the CPU: the device was free from then
        assert marks["measure"] < marks["report"], (r.number, marks)
        assert tl["measure_end"] < r.finished_at, (r.number, tl)
        spans.append((tl["measure_start"], tl["measure_end"], r.finished_at, r.number))
    spans.sort()
    for (_s0, e0, _f0, a), (s1, _e1, _f1, b) in zip(spans, spans[1:], strict=False):
        assert e0 <= s1, (a, b, spans)  # measurements still one at a time
    # some candidate measured while an earlier one was still in its 2 s task metric
    assert any(s1 < f0 for (_s0, _e0, f0, _a), (s1, _e1, _f1, _b) in zip(spans, spans[1:], strict=False)), spans


@pytest.mark.slow
def test_a_candidate_waiting_for_the_device_counts_as_built_before_its_turn(tmp_path, monkeypatch):
    """Found in the H100 timelines (2026-12-06): the finalists' round processes started only when
    the last candidate got the device (ConvNeXt-Tiny: built at 24 s, round processes at 37 s),
    because the parent's poll thread reported a candidate's ``wait`` phase only after its grant
    (it blocked in the gate first). The coordinator must know every candidate is built (``settled``)
    while the last ones still wait for their turn."""
    from gptuner_core.engine.loop import tuner

    hints: list[tuple[float, bool]] = []
    real = tuner.start_rounds_ahead

    def recorded(cfg, evaluator, history, *, settled=True, waiting=()):
        hints.append((time.time(), settled))
        return real(cfg, evaluator, history, settled=settled, waiting=waiting)

    monkeypatch.setattr(tuner, "start_rounds_ahead", recorded)
    study = tmp_path / "s"
    slow = {**QUICK, "warmup_s": 1.0}  # each candidate holds the device for a second or more
    args = _faulty_tune(study, monkeypatch, "on", EXPR, 5, "--revalidate-top-k", "1",
                        "--revalidate-rounds", "2", "--min-effect", "0.5", measure=slow)
    assert main(args) in (0, 3)
    with open_store(study, readonly=True) as store:
        grants = [r.extra["timeline"]["measure_start"] for r in store.candidates()
                  if "measure_start" in r.extra.get("timeline", {})]
    settled = [t for t, s in hints if s]
    assert len(grants) >= 4 and settled, (grants, hints)
    assert min(settled) < max(grants), (sorted(grants), hints)


def _until(done, limit: float = 120.0) -> None:
    wait_for(done, limit, poll_s=0.02)


def _release_when_default_measured(study: Path, hold: Path, first: Path) -> None:
    """Let the held builds finish together once the default route has left the device, and the
    held first calls once all three candidates are in them (never, if one waits for another:
    then each first call goes on after its own 30 s)."""
    def marks(n: int) -> str:
        phase = study / "candidates" / f"{n:05d}" / "phase"
        return phase.read_text() if phase.exists() else ""

    _until(lambda: "report" in marks(0))
    hold.touch()
    _until(lambda: all("warmup" in marks(n) for n in (1, 2, 3)), limit=60)
    if all("warmup" in marks(n) for n in (1, 2, 3)):
        first.touch()


@pytest.mark.slow
def test_first_calls_run_beside_each_other_and_the_device_is_held_alone_for_the_samples(tmp_path, monkeypatch):
    """Found in the H100 timelines (2026-12-06): a candidate held the device alone for its
    first calls and the accuracy gate's outputs (lazy CUDA module loading, cuDNN set-up, CUDA
    graph capture: 1.3-2.9 s a candidate on ConvNeXt-Tiny), 8.9 s of the 12.1 s the six ResNet-50
    candidates held it, against 2.0 s of timed samples. That work needs the device, not the
    device alone: it runs beside the other candidates' (``warmup``), never beside a measurement,
    and the device is held alone from ``ready`` (the samples, the profile)."""
    import threading

    hold, first = tmp_path / "go", tmp_path / "first"
    study = tmp_path / "s"
    # a build slot for each of the four candidates: with three, the three held builds could take
    # every slot before the default (seen under load: the default waited 120 s behind them)
    args = _faulty_tune(study, monkeypatch, "on", "-fault:first_ms=1500 -fault:sleep_ms=[100|200|300]", 4,
                        "--backend-option", f"hold_builds={hold}", "--backend-option",
                        f"hold_first_calls={first}", "--revalidate-top-k", "0")
    threading.Thread(target=_release_when_default_measured, args=(study, hold, first), daemon=True).start()
    assert main(args) == 0
    with open_store(study, readonly=True) as store:
        recs = [r for r in store.candidates() if r.state is CandidateState.COMPLETE]
    assert len(recs) == 4, [(r.number, r.state, r.error) for r in recs]
    alone = {r.number: (r.extra["timeline"]["measure_start"], r.extra["timeline"]["measure_end"]) for r in recs}
    warm = {}
    for r in recs[1:]:
        marks = _phases(study, r.number)
        assert "warmup" in marks and "ready" in marks, (r.number, marks)
        assert marks["wait"] <= marks["warmup"] < marks["ready"] <= alone[r.number][0] <= marks["measure"], (
            r.number, marks, alone[r.number])
        warm[r.number] = (marks["warmup"], marks["ready"])
    for n, (w0, w1) in warm.items():  # first calls never beside a measurement
        for m, (a0, a1) in alone.items():
            assert w1 <= a0 or a1 <= w0, (n, (w0, w1), m, (a0, a1))
    # built together, the three ran their first calls at the same time, not one after another
    # (their first calls are held until all three are in them: no timing decides this)
    assert max(w0 for w0, _ in warm.values()) < min(w1 for _, w1 in warm.values()), warm
    assert first.exists(), "the three candidates were never in their first calls together"


def test_a_candidate_run_again_after_dying_in_its_warmup_does_not_take_the_shared_device_twice(tmp_path):
    """A candidate process killed by what is not its route's doing (the launcher's death) runs
    again in the same turn: its ``wait`` comes a second time while it still shares the device
    from the first attempt. Taking a second share waited for a measurement that itself waited for
    the first share to go: neither could move. Real threads and the real gate."""
    import threading

    from gptuner_core.engine.process.turn import READY
    from gptuner_core.engine.process.turn import REPORT
    from gptuner_core.engine.process.turn import TURN_ALONE
    from gptuner_core.engine.process.turn import WAIT
    from gptuner_core.engine.scale.device_gate import DeviceGate
    from gptuner_core.engine.scale.overlap import CoreSplit
    from gptuner_core.engine.scale.overlap import DeviceTurn

    gate = DeviceGate(build_workers=2, build_uses_device=False)
    split = CoreSplit(build=(), measure=())
    x = DeviceTurn(gate.view(uses_device=False), tmp_path / "x", split)
    y = DeviceTurn(gate.view(uses_device=False), tmp_path / "y", split)
    x.start()
    y.start()
    x.on_phase(WAIT)  # x shares the device for its first calls ...
    y.on_phase(WAIT)
    granted = threading.Event()

    def y_measures() -> None:
        y.on_phase(READY)  # ... y waits for the device alone, until x's share ends
        granted.set()

    threading.Thread(target=y_measures, daemon=True).start()
    again = threading.Thread(target=x.on_phase, args=(WAIT,), daemon=True)  # x, run again
    again.start()
    again.join(5)
    assert not again.is_alive(), "x's second wait blocked behind y, which waits for x's first share"
    assert not granted.is_set()  # x still shares the device: y does not measure beside it
    x.close()  # x's process ended: its share with it, so y measures
    assert granted.wait(5)
    assert (tmp_path / "y" / TURN_ALONE).exists()
    y.on_phase(REPORT)
    y.close()
