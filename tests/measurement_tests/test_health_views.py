"""Health tiles and their charts come from one computation (measurement.health).

The defect: the Results page's drift tile read ``+0.0% … +0.0%`` while its chart showed the
default route at -85 %: the tile's range came from the drift-sentinel events alone (one event
compared with itself), the chart also counted candidate #0's own measurement.
"""

from __future__ import annotations

import json

import pytest

from gptuner_core.measurement import health_summary
from gptuner_core.measurement import summarize
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState


def rec(number: int, median: float, finished_at: float, samples=None) -> CandidateRecord:
    samples = samples or [median * 0.99, median, median * 1.01] * 5
    return CandidateRecord(
        number=number, requested_route="", state=CandidateState.COMPLETE,
        latency=summarize(samples), samples_ms=tuple(samples), finished_at=finished_at,
    )


RECORDS = [rec(0, 1.0, 100.0), rec(1, 0.9, 110.0), rec(2, 0.2, 300.0)]
#: one drift-sentinel event, as the store's baseline payloads hold them
EVENTS = [{"after_candidate": 1, "time": 200.0, "median_ms": 0.15, "cv": 0.01}]


def test_drift_tile_and_chart_agree() -> None:
    """Candidate #0 at 1.0 ms, the sentinel at 0.15 ms: tile and chart both say -85 %."""
    health = health_summary(RECORDS, EVENTS)
    assert health.drift_range == pytest.approx((-0.85, 0.0))
    tile = next(t for t in health.tiles() if t.key == "drift")
    assert tile.value == "-85.0% … +0.0%"
    chart = health.drift.points
    assert [p.source for p in chart] == ["candidate #0", "re-measured"]
    assert [round(p.drift, 4) for p in chart] == [0.0, -0.85]
    assert (min(p.drift for p in chart), max(p.drift for p in chart)) == health.drift_range
    assert any("drifted from -85.0% to +0.0%" in w for w in health.warnings)


def test_tiles_render_every_figure_once_and_json_round_trips() -> None:
    """Each tile is computed from the same summary; the JSON keeps the tiles and the chart."""
    health = health_summary(RECORDS, EVENTS)
    keys = [t.key for t in health.tiles()]
    assert keys == ["median_cv", "drift", "busy", "throttled"]
    data = json.loads(json.dumps(health.to_json()))
    assert data["drift_range"] == pytest.approx([-0.85, 0.0])
    assert [p["median_ms"] for p in data["drift"]["points"]] == [1.0, 0.15]
    assert data["tiles"][1]["value"] == "-85.0% … +0.0%"


def test_no_baseline_gives_a_dash_not_zero() -> None:
    """Only candidate #0 measured: one point, no drift range, tile "—" (not "+0.0%")."""
    health = health_summary(RECORDS[:1], [])
    assert health.drift_range is None
    assert next(t for t in health.tiles() if t.key == "drift").value == "—"


def test_window_regimes_are_reported() -> None:
    """Most candidates whose windows jump between 0.42 and 0.84 ms: a typed record per
    candidate and one warning."""
    two_levels = [0.42] * 30 + [0.84] * 20
    records = [rec(i, 0.5, 100.0 + i, samples=[x * (1 + 0.001 * j) for j, x in enumerate(two_levels)])
               for i in range(3)]
    health = health_summary(records, [])
    assert [r.route for r in health.regimes] == [0, 1, 2]
    assert all(r.scope == "window" and r.bimodal for r in health.regimes)
    assert any("3 of 3 candidates" in w and "two speed levels" in w for w in health.warnings)
