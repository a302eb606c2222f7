"""The replay backend answers builds and timings from a recorded study, deterministically."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.backends import get_backend
from gptuner_core.errors import BackendError
from gptuner_core.recording import load_recording
from gptuner_core.routes import Route


SWEEP = Path(__file__).resolve().parents[1] / "data" / "recorded_sweep" / "sweep.json"


def test_recorded_evaluator_answers_with_the_recorded_record():
    from gptuner_core.engine.evaluate.recorded import RecordedEvaluator
    from gptuner_core.strategies import Proposal

    rec = load_recording(SWEEP)
    ev = RecordedEvaluator(rec)
    route = rec.expression.route_at("full", 5)
    recorded = rec.by_key[route.key(rec.db)]
    got = ev.evaluate(Proposal(route=route), 7, [], {}, lambda _: None)
    assert got.number == 7 and got.state is recorded.state
    assert got.samples_ms == recorded.samples_ms and got.latency == recorded.latency
    again = ev.remeasure(got, "r1")
    assert again.ok and again.samples_ms == recorded.samples_ms


def test_missing_route_is_build_failed():
    from gptuner_core.engine.evaluate.recorded import RecordedEvaluator
    from gptuner_core.strategies import Proposal

    ev = RecordedEvaluator(load_recording(SWEEP))
    route = Route.parse("-ort:precision=int8_qdq -ort:quant_per_channel=1")
    got = ev.evaluate(Proposal(route=route), 1, [], {}, lambda _: None)
    assert got.state.value == "BUILD_FAILED" and "route not in the recording" in got.error
    assert ev.missing == [str(route)]


def test_the_replay_backend_builds_nothing(tmp_path):
    backend = get_backend("replay", {})
    assert backend.describe(SWEEP) == load_recording(SWEEP).db
    with pytest.raises(BackendError, match="recorded evaluator"):
        backend.build(SWEEP, Route.parse(""), tmp_path)


@pytest.mark.parametrize("search", ["fast_tpe", "race"])
def test_the_real_tuner_replays_a_recorded_sweep(tmp_path, search):
    """The tuner drives the replay backend like any other: default first, no duplicates,
    budget respected, winner re-validated in fresh processes."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.loop.tuner import Tuner
    from gptuner_core.storage import open_store

    rec = load_recording(SWEEP)
    cfg = StudyConfig(model=str(SWEEP), backend="replay", expression=str(rec.expression),
                      search=search, max_candidates=8, revalidate_top_k=1, revalidate_rounds=2,
                      drift_every=0)
    summary = Tuner(cfg, tmp_path / "study").run()
    assert summary.status == "finished"
    with open_store(tmp_path / "study", readonly=True) as store:
        recs = store.candidates()
        winner = store.get_meta("winner")
    assert Route.parse(recs[0].requested_route).key(rec.db) == rec.expression.baseline().key(rec.db)
    keys = [Route.parse(r.requested_route).key(rec.db) for r in recs]
    assert len(keys) == len(set(keys)) and len(recs) <= 8
    assert winner and winner["message"]


@pytest.mark.parametrize("search", ["fast_tpe", "race", "mixed"])
def test_simulate_and_the_tuner_are_one_loop(tmp_path, search):
    """The same recording, strategy, seed and budget give the same proposals, in the same
    order, whether the loop runs in ``simulate`` or in a real tuner on the replay backend."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.loop.simulate import simulate
    from gptuner_core.engine.loop.tuner import Tuner
    from gptuner_core.storage import open_store

    rec = load_recording(SWEEP)
    sim = simulate(search, SWEEP, 9, seed=4)
    cfg = StudyConfig(model=str(SWEEP), backend="replay", expression=str(rec.expression),
                      search=search, seed=4, max_candidates=9, revalidate_top_k=1,
                      revalidate_rounds=2, drift_every=0)
    Tuner(cfg, tmp_path / "study").run()
    with open_store(tmp_path / "study", readonly=True) as store:
        routes = [r.requested_route for r in store.candidates()]
    built = [s.route for s in sim.trace if not s.remeasure]
    assert routes == built
    assert sim.builds_used == len(routes) <= 9


def test_the_recording_is_indexed_once():
    """Issue 28: ``by_key`` was rebuilt (every route parsed) on each call, and ``baseline`` /
    ``speedup`` / ``optimum`` called it per record, so a replay of a large space never ended."""
    rec = load_recording(SWEEP)
    assert rec.by_key is rec.by_key
    assert rec.baseline is rec.baseline
    assert rec.optimum() is rec.optimum()
    route = rec.expression.route_at("full", 3)
    assert rec.lookup(str(route)) is rec.by_key[route.key(rec.db)]
    assert rec.lookup("-ort:precision=int8_qdq -ort:quant_per_channel=1") is None
