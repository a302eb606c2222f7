"""The one loop's rules, driven by the recorded evaluator over a real recorded sweep."""

from __future__ import annotations

from pathlib import Path

from gptuner_core.engine.evaluate.recorded import RecordedEvaluator
from gptuner_core.engine.loop.loop import Budget
from gptuner_core.engine.loop.loop import run_loop
from gptuner_core.recording import load_recording
from gptuner_core.records import CandidateState
from gptuner_core.records import StudyStatus
from gptuner_core.routes import Route
from gptuner_core.strategies import Proposal
from gptuner_core.strategies import Strategy
from gptuner_core.strategies import get_strategy


SWEEP = Path(__file__).resolve().parents[1] / "data" / "recorded_sweep" / "sweep.json"


class ListSink:
    def __init__(self, stop_after: int | None = None, done_baselines=()) -> None:
        self.events: list[tuple] = []
        self.stop_after = stop_after
        self.done = set(done_baselines)
        self.n = 0

    def started(self, rec): self.events.append(("started", rec.number))  # noqa: E704
    def finished(self, rec, history): self.n += 1; self.events.append(("finished", rec.number))  # noqa: E702, E704
    def replaced(self, rec): self.events.append(("replaced", rec.number))  # noqa: E704
    def skipped(self, proposal): self.events.append(("skipped", str(proposal.route)))  # noqa: E704
    def phase(self, route, phase, history): pass  # noqa: E704
    def baseline(self, after, result): self.done.add(after); self.events.append(("baseline", after))  # noqa: E702, E704
    def baselines_done(self): return set(self.done)  # noqa: E704
    def stop_requested(self): return self.stop_after is not None and self.n >= self.stop_after  # noqa: E704
    def elapsed_s(self): return 0.0  # noqa: E704


def _run(strategy, budget=None, sink=None, history=None):
    budget = budget or Budget()
    rec = load_recording(SWEEP)
    sink = sink or ListSink()
    history = history if history is not None else []
    end = run_loop(strategy=strategy, evaluator=RecordedEvaluator(rec), history=history,
                   key=lambda t: Route.parse(t).key(rec.db), budget=budget, sink=sink,
                   space_size=rec.expression.count("full"), search=strategy.name or "test")
    return end, history, sink


def _strategy(name="fast", **kw):
    rec = load_recording(SWEEP)
    return get_strategy(name, rec.expression, db=rec.db, **kw)


class TestBudgets:
    def test_max_candidates_counts_the_default(self):
        end, history, _ = _run(_strategy(), Budget(max_candidates=3))
        assert len(history) == 3 and end.status is StudyStatus.FINISHED
        assert end.reason == "candidate budget reached (3)"

    def test_stop_request(self):
        end, history, _ = _run(_strategy(), sink=ListSink(stop_after=2))
        assert len(history) == 2 and end.status is StudyStatus.STOPPED

    def test_exhausted_strategy(self):
        s = _strategy()
        end, history, _ = _run(s)
        assert end.exhausted and len(history) == s.planned()


class Repeater(Strategy):
    """Proposes the baseline forever: the loop must skip, never rebuild, and stop."""

    name = "repeater"

    def ask(self, history):
        return Proposal(route=self.space.baseline())


class TestRules:
    def test_evaluated_routes_are_skipped_not_rebuilt(self):
        rec = load_recording(SWEEP)
        end, history, sink = _run(Repeater(rec.expression, db=rec.db))
        assert len(history) == 1
        assert sum(1 for e in sink.events if e[0] == "skipped") > 10_000
        assert "kept proposing evaluated routes" in end.reason

    def test_race_remeasurement_replaces_and_is_not_a_build(self):
        end, history, sink = _run(_strategy("race"))
        replaced = [e for e in sink.events if e[0] == "replaced"]
        started = [e for e in sink.events if e[0] == "started"]
        assert replaced and len(started) == len(history)

    def test_a_failed_default_ends_the_study(self):
        rec = load_recording(SWEEP)

        class Missing(Strategy):
            name = "missing"

            def ask(self, history):
                return Proposal(route=Route.parse("-ort:precision=int8_qdq -ort:quant_per_channel=1"))

        end, history, _ = _run(Missing(rec.expression, db=rec.db))
        assert end.status is StudyStatus.FAILED and history[0].state is CandidateState.BUILD_FAILED
        assert "the default route failed" in end.reason


class TestDrift:
    def test_drift_sentinel_every_n(self):
        _, history, sink = _run(_strategy("full"), Budget(max_candidates=7, drift_every=3))
        assert [e[1] for e in sink.events if e[0] == "baseline"] == [history[3].number, history[6].number]

    def test_a_drift_point_missing_after_a_kill_is_redone_first(self):
        _, history, _ = _run(_strategy(), Budget(max_candidates=4))
        sink = ListSink()  # the store holds no baseline for the point after candidate 3
        _, history, sink = _run(_strategy(), Budget(max_candidates=5, drift_every=3), sink, history)
        assert sink.events[0] == ("baseline", 3)


def test_the_tuner_imports_the_statistics_ahead_of_its_first_result(tmp_path, tiny_model, tiny_dataset, monkeypatch):
    """``measurement.stats.import_ahead`` runs as the study starts, before the default route
    has a result (the first speed-up would import scipy.stats otherwise, holding every other
    result behind the import lock)."""
    import time

    from gptuner_core.cli import main
    from gptuner_core.measurement import stats
    from gptuner_core.storage import open_store

    from .conftest import FAULTY

    calls: list[float] = []
    monkeypatch.setattr(stats, "import_ahead", lambda: calls.append(time.time()))
    study = tmp_path / "s"
    assert main(["tune", str(tiny_model), "--backend", FAULTY, "--expr", "-fault:tie=[x]",
                 "--dataset", str(tiny_dataset), "--batch-size", "4", "--epsilon", "1e-3",
                 "--revalidate-top-k", "0", "--drift-every", "0", "--profile-runs", "0",
                 "--study", str(study), "--quiet", "--measure-option=max_time_s=0.05"]) == 0
    with open_store(study, readonly=True) as store:
        default = store.candidate(0)
    assert len(calls) == 1 and calls[0] < default.finished_at
