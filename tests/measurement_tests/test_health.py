"""Per-study measurement health from candidate records and baseline events."""

from __future__ import annotations

import json

import pytest

from gptuner_core.measurement import health_summary
from gptuner_core.measurement import summarize
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState


def rec(
    number: int, cv_spread: float, *, reason: str = "converged", **telemetry: bool
) -> CandidateRecord:
    samples = [1.0 - cv_spread, 1.0, 1.0 + cv_spread] * 5
    lat = summarize(samples, stop_reason=reason)
    return CandidateRecord(
        number=number,
        requested_route="",
        state=CandidateState.COMPLETE,
        latency=lat,
        telemetry=telemetry,
    )


def test_healthy_study_has_no_warnings() -> None:
    """Low CV, converged, quiet host, flat baseline: ok and JSON-able."""
    h = health_summary([rec(i, 0.01) for i in range(4)], [(0.0, 1.0), (10.0, 1.01)])
    assert h.ok and h.warnings == ()
    assert h.median_cv == pytest.approx(0.0085, abs=1e-3)
    assert (h.high_cv_share, h.throttled_share, h.busy_share) == (0.0, 0.0, 0.0)
    assert h.n_baselines == 2 and h.drift_range == pytest.approx((0.0, 0.01))
    json.dumps(h.to_json())


def test_noisy_study_warns_in_plain_language() -> None:
    """High CV, not converged, throttled, busy and drifting: one sentence each."""
    recs = [rec(i, 0.1, reason="max_time", throttled=i == 0, busy=True) for i in range(4)]
    recs.append(CandidateRecord(number=9, requested_route="", state=CandidateState.CRASHED))
    h = health_summary(recs, [(0.0, 1.0), (5.0, 1.2)])
    assert h.n_measured == 4
    assert h.high_cv_share == 1.0 and h.throttled_share == 0.25 and h.busy_share == 1.0
    text = "\n".join(h.warnings)
    assert (
        "4 of 4 candidates (100%) had a latency CV above 2.5% (trtexec's warning threshold" in text
    )
    assert "stopped at the sample or time limit" in text
    assert "1 of 4 candidates (25%) were measured while the GPU was throttled" in text
    assert "other processes were busy during 4 of 4" in text
    assert "the default route drifted from +0.0% to +20.0%" in text
    assert not h.ok


def test_empty_study() -> None:
    """No measured candidate yet: a single plain warning, no division by zero."""
    h = health_summary([])
    assert h.n_measured == 0 and h.median_cv is None
    assert h.warnings == ("no candidate has a latency measurement yet",)
