"""The replay backend answers builds and timings from a recorded study, deterministically."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.backends import get_backend
from gptuner_core.errors import BackendError
from gptuner_core.replay import load_recording
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
