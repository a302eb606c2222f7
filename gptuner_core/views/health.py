"""Measurement health views: drift of the default route and drift-normalized speed-ups."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.views.legend import legend_below


if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from gptuner_core.records import CandidateRecord


def _baselines(records: Sequence[CandidateRecord], payloads: Iterable[dict[str, Any]]) -> list[dict]:
    """The default route's own measurement (candidate 0) plus every drift-sentinel re-measurement
    (the points of :func:`gptuner_core.measurement.health.drift_view`)."""
    from gptuner_core.measurement.health import drift_view

    return [{"after_candidate": p.after_candidate, "time": p.time, "median_ms": p.median_ms,
             "source": p.source} for p in drift_view(records, payloads).points]


def drift_frame(view: Any, payloads: Iterable[dict[str, Any]] | None = None) -> pd.DataFrame:
    """One row per measurement of the default route: when, median, drift vs the first (%).

    ``view``: a :class:`~gptuner_core.measurement.health.DriftView` (the health summary's, so the
    chart shows what the drift tile says), or the study's records with ``payloads``, the
    baseline events."""
    import pandas as pd

    from gptuner_core.measurement.health import drift_view

    if payloads is not None:
        view = drift_view(view, payloads)
    rows = [{"after_candidate": p.after_candidate, "time": p.time, "median_ms": p.median_ms,
             "source": p.source, "drift_pct": p.drift * 100.0} for p in view.points]
    return pd.DataFrame(rows, columns=["after_candidate", "time", "median_ms", "source", "drift_pct"])


def drift_figure(df: pd.DataFrame) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(
        x=df["after_candidate"], y=df["drift_pct"], mode="lines+markers",
        text=[f"{m:.4g} ms ({s})" for m, s in zip(df["median_ms"], df["source"], strict=True)],
        hovertemplate="after #%{x}: %{y:+.1f}%<br>%{text}<extra></extra>", name="default route",
    ))
    fig.add_hline(y=0, line_dash="dot", line_color="grey")
    fig.update_layout(xaxis_title="after candidate #", yaxis_title="default route vs first (%)",
                      height=320, margin={"l": 10, "r": 10, "t": 30, "b": 10})
    return legend_below(fig)


def normalized_frame(
    records: Sequence[CandidateRecord], payloads: Iterable[dict[str, Any]]
) -> pd.DataFrame:
    """Speed-up vs the first default measurement and vs the default measured nearest in time."""
    import pandas as pd

    from gptuner_core.measurement import normalized_speedup

    base = [(b["time"], b["median_ms"]) for b in _baselines(records, payloads)]
    rows = []
    for r in records:
        if r.latency is None or r.finished_at is None or not base:
            continue
        rows.append({
            "number": r.number,
            "state": r.state.value,
            "median_ms": r.latency.median_ms,
            "speedup": r.speedup,
            "normalized_speedup": normalized_speedup(r.finished_at, r.latency.median_ms, base),
            "route": r.requested_route,
        })
    return pd.DataFrame(rows, columns=["number", "state", "median_ms", "speedup",
                                       "normalized_speedup", "route"])
