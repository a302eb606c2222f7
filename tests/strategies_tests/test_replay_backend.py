"""The replay backend answers builds and timings from a recorded study, deterministically."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.backends import get_backend
from gptuner_core.errors import BackendError
from gptuner_core.recording import load_recording
from gptuner_core.routes import Route


SWEEP = Path(__file__).resolve().parents[1] / "data" / "recorded_sweep" / "sweep.json"


def test_build_and_time_replay_recorded_samples(tmp_path):
    backend = get_backend("replay", {})
    rec = load_recording(SWEEP)
    assert backend.describe(SWEEP) == rec.db
    route = rec.expression.route_at("full", 5)
    built = backend.build(SWEEP, route, tmp_path / "c5")
    recorded = rec.by_key[route.key(rec.db)]
    with backend.load(built) as runner:
        runner.prepare({})
        got = [runner.time_calls(10) / 10 / 1e6 for _ in range(len(recorded.samples_ms))]
    assert got == pytest.approx(list(recorded.samples_ms))


def test_missing_route_is_a_build_error(tmp_path):
    backend = get_backend("replay", {})
    with pytest.raises(BackendError, match="route not in the recording"):
        backend.build(SWEEP, Route.parse("-ort:precision=int8_qdq -ort:quant_per_channel=1"), tmp_path)


@pytest.mark.parametrize("search", ["fast_tpe", "race"])
def test_the_real_tuner_replays_a_recorded_sweep(tmp_path, search):
    """The tuner drives the replay backend like any other: default first, no duplicates,
    budget respected, winner re-validated in fresh processes."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.tuner import Tuner
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
