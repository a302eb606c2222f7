"""Pending-aware asking: with k proposals in flight, no strategy proposes a duplicate.

Driven on the real recorded sweep (``tests/data/recorded_sweep/sweep.json``) with the recorded
evaluator, as the parallel loop drives it: up to k proposals in flight, the oldest told first,
``None`` with proposals in flight means "wait for one".
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from gptuner_core.engine.evaluate.recorded import RecordedEvaluator
from gptuner_core.recording import load_recording
from gptuner_core.strategies import get_strategy
from gptuner_core.strategies import strategy_names


SWEEP = Path(__file__).resolve().parents[1] / "data" / "recorded_sweep" / "sweep.json"
warnings.filterwarnings("ignore", category=FutureWarning)


@pytest.fixture(scope="module")
def recording():
    return load_recording(SWEEP)


def drive(name, recording, k, limit=40, **opts):
    """Keep up to ``k`` proposals in flight; return every built key in proposal order."""
    strategy = get_strategy(name, recording.expression, seed=4, db=recording.db, **opts)
    evaluator = RecordedEvaluator(recording)
    history, pending, keys = [], [], []

    def complete_oldest():
        p = pending.pop(0)
        rec = evaluator.evaluate(p, len(history), history, {}, lambda ph: None)
        history.append(rec)
        strategy.tell(rec)

    for _ in range(limit * 3):
        if len(keys) >= limit:
            break
        p = strategy.ask(history, tuple(pending))
        if p is None:
            if not pending:
                break
            complete_oldest()
            continue
        if p.remeasure_of is not None:  # a race re-measurement: builds nothing, told at once
            while pending:
                complete_oldest()
            strategy.tell(next(r for r in history if r.number == p.remeasure_of))
            continue
        keys.append(p.route.key(recording.db))
        pending.append(p)
        if len(pending) >= k:
            complete_oldest()
    while pending:
        complete_oldest()
    return keys


@pytest.mark.parametrize("name", strategy_names())
@pytest.mark.parametrize("k", [2, 4])
def test_no_duplicate_with_proposals_in_flight(name, k, recording):
    opts = {"max_trials": 5} if name == "gp" else {}
    keys = drive(name, recording, k, **opts)
    assert len(keys) >= 2
    assert len(keys) == len(set(keys)), f"{name} proposed a route in flight again"


@pytest.mark.parametrize("name", ["fast", "full", "mixed", "random", "race"])
def test_enumerations_propose_the_sequential_set(name, recording):
    """Exact for enumerations: k in flight proposes the same routes as one at a time."""
    assert sorted(drive(name, recording, 3)) == sorted(drive(name, recording, 1))


def test_pending_without_skipping_means_no_duplicate_at_the_first_ask(recording):
    """The baseline in flight is not proposed again; the next proposal is a different route."""
    strategy = get_strategy("fast_tpe", recording.expression, seed=0, db=recording.db)
    first = strategy.ask([])
    second = strategy.ask([], (first,))
    assert second is not None
    assert second.route.key(recording.db) != first.route.key(recording.db)
