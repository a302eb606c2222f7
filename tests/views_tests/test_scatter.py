"""The accuracy × latency scatter: log axis, winner and default marked, front visible with one
point, duplicates grouped, hovers that fit, large studies grouped server-side."""

from __future__ import annotations

import pytest

from gptuner_core import views
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.views.scatter import wrap_hover


def lat(ms: float) -> LatencyStats:
    return LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms, cv=0.01,
                        ci_low_ms=ms, ci_high_ms=ms, n_samples=10)


def rec(n, ms, loss, state=CandidateState.COMPLETE, route=None):
    return CandidateRecord(number=n, requested_route=route or f"-k=v{n}", state=state,
                           latency=lat(ms), accuracy=AccuracyResult(metric="l2", losses={"o": loss}))


def frame(records, eps=1e-2):
    return views.apply_epsilon(views.candidates_frame(records), records, eps)


def _trace(fig, prefix):
    return next(t for t in fig.data if t.name.startswith(prefix))


def test_log_axis_survives_an_outlier_and_zero_loss() -> None:
    """Defect: the linear axis let one int4 outlier (loss 4.7) flatten every other point."""
    records = [rec(0, 10.0, 0.0), rec(1, 8.0, 1e-5), rec(2, 7.0, 4.7, CandidateState.ACCURACY_FAILED)]
    fig = views.accuracy_latency_figure(frame(records), epsilon=1e-2)
    assert fig.layout.yaxis.type == "log"
    assert min(_trace(fig, "eligible").y) == pytest.approx(1e-6)  # the zero loss sits a decade under 1e-5
    assert views.accuracy_latency_figure(frame(records), log_y=False).layout.yaxis.type != "log"


def test_winner_default_and_single_point_front() -> None:
    """Defects: the winner was not marked; the Pareto front was invisible with one point."""
    records = [rec(0, 10.0, 0.0), rec(1, 12.0, 0.0)]
    fig = views.accuracy_latency_figure(frame(records), winner=0)
    front = _trace(fig, "Pareto front")
    assert len(front.x) == 1 and "markers" in front.mode
    assert _trace(fig, "default route #0").marker.symbol == "square"
    # issue 25: the default is never drawn as "winner" (the scatter once labelled it "winner #0")
    assert not [t for t in fig.data if str(t.name).startswith("winner")]
    fig = views.accuracy_latency_figure(frame(records), winner=1)
    assert _trace(fig, "winner #1").marker.symbol == "star"


def test_duplicates_grouped_and_hover_fits() -> None:
    """Defects: duplicates overlapped exactly; hovers were cut off."""
    long_route = " ".join(f"-namespace:knob_{i}=value_{i}" for i in range(30))
    records = [rec(0, 10.0, 0.0)] + [rec(i, 5.0, 1e-4, route=long_route) for i in range(1, 6)]
    fig = views.accuracy_latency_figure(frame(records))
    eligible = _trace(fig, "eligible (6)")
    assert len(eligible.x) == 2  # five identical candidates -> one marker
    text = next(t for t in eligible.hovertext if "identical" in t)
    assert "#1, #2, #3, #4, #5 (5 identical)" in text
    assert all(len(line) <= 60 for line in text.split("<br>")[2:])
    assert len(wrap_hover(long_route).split("<br>")) == 6


def test_large_study_is_grouped_but_exact_marks_stay() -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    records = [rec(0, 10.0, 0.0)] + [rec(i, float(rng.uniform(5, 15)), float(rng.uniform(1e-6, 1e-3)))
                                     for i in range(1, 3001)]
    df = frame(records)
    fig = views.accuracy_latency_figure(df, winner=1, max_points=1000)
    n_markers = sum(len(t.x) for t in fig.data if t.name.startswith("eligible"))
    assert n_markers < 3000
    assert _trace(fig, "eligible (3001)")
    assert _trace(fig, "winner #1") and _trace(fig, "Pareto front")


def test_untimed_failures_grouped_by_cause() -> None:
    """Hundreds of crashes with one cause were hundreds of markers drawn on one spot (slow to
    draw, unreadable); now one marker per cause, with its count and first numbers."""
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState

    records = [rec(0, 10.0, 0.0)] + [
        CandidateRecord(number=i, requested_route=f"-k={i}", state=CandidateState.CRASHED,
                        error="SIGSEGV in build\ntraceback..." if i % 2 else "timeout after 600 s")
        for i in range(1, 401)]
    fig = views.accuracy_latency_figure(frame(records))
    failed = _trace(fig, "crashed / failed, no latency (400)")
    assert len(failed.x) == 2
    text = " ".join(failed.hovertext)
    assert "#1, #3, #5" in text and "(200 candidates)" in text and "SIGSEGV in build" in text
    assert "traceback" not in text


def test_latency_axis_is_log_when_latencies_span_decades() -> None:
    """Issue 26: a 0.04 ms route beside a 12 ms one sat on a linear axis; log axes where
    latencies span decades (Results' scatter and Live's chart), linear otherwise."""
    from gptuner_core.views import explore

    wide = frame([rec(0, 12.0, 0.0), rec(1, 0.04, 1e-5), rec(2, 3.0, 1e-4)])
    assert views.accuracy_latency_figure(wide).layout.xaxis.type == "log"
    assert explore.landing_figure(wide).layout.yaxis.type == "log"
    narrow = frame([rec(0, 12.0, 0.0), rec(1, 10.0, 1e-5)])
    assert views.accuracy_latency_figure(narrow).layout.xaxis.type != "log"
