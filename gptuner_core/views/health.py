"""Measurement health views: drift of the default route and drift-normalized speed-ups."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

    from gptuner_core.records import CandidateRecord


def _baselines(records: Sequence[CandidateRecord], payloads: Iterable[dict[str, Any]]) -> list[dict]:
    """The default route's own measurement (candidate 0) plus every drift-sentinel re-measurement."""
    out = []
    first = next((r for r in records if r.number == 0), None)
    if first is not None and first.latency is not None and first.finished_at is not None:
        out.append({"after_candidate": 0, "time": float(first.finished_at),
                    "median_ms": float(first.latency.median_ms), "source": "candidate #0"})
    for p in payloads:
        if p.get("median_ms") and p.get("time") is not None:
            out.append({"after_candidate": p.get("after_candidate"), "time": float(p["time"]),
                        "median_ms": float(p["median_ms"]), "source": "re-measured"})
    return sorted(out, key=lambda b: b["time"])


def drift_frame(records: Sequence[CandidateRecord], payloads: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per measurement of the default route: when, median, drift vs the first (%)."""
    import pandas as pd

    rows = _baselines(records, payloads)
    df = pd.DataFrame(rows, columns=["after_candidate", "time", "median_ms", "source"])
    if not df.empty:
        df["drift_pct"] = (df["median_ms"] / df["median_ms"].iloc[0] - 1.0) * 100.0
    else:
        df["drift_pct"] = []
    return df


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
    return fig


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
