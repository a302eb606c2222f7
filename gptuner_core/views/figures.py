"""Plotly figures for the results, route-trace and compare pages (no streamlit here).

Each function takes a frame from :mod:`gptuner_core.views._frames` (or plain sample lists) and
returns a ``plotly.graph_objects.Figure``. WebGL traces keep 10,000 points responsive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import pandas as pd
    import plotly.graph_objects as go

from gptuner_core.views._frames import ACCURACY_FAILED
from gptuner_core.views._frames import ELIGIBLE
from gptuner_core.views._frames import FAILED
from gptuner_core.views._frames import NOT_MEASURED
from gptuner_core.views._frames import pareto_mask


STYLE = {
    ELIGIBLE: {"color": "#1f77b4", "symbol": "circle"},
    ACCURACY_FAILED: {"color": "#d62728", "symbol": "diamond-open"},
    NOT_MEASURED: {"color": "#ff7f0e", "symbol": "square-open"},
    FAILED: {"color": "#7f7f7f", "symbol": "x"},
}


def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    fig.update_layout(
        title=title,
        xaxis_title=x,
        yaxis_title=y,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.2},
        template="plotly_white",
    )
    return fig


def accuracy_latency_figure(
    df: pd.DataFrame, *, epsilon: float | None = None, metric: str = "loss"
) -> go.Figure:
    """Accuracy loss vs median latency, one marker style per category, Pareto front, ε line.

    Candidates without a latency (crashed, build-failed, timed out, or rejected by the gate before
    timing) are drawn as ``x`` markers in a strip to the right of the slowest measured candidate,
    with their state and error on hover.
    """
    import numpy as np
    import plotly.graph_objects as go

    fig = go.Figure()
    timed = df[df["median_ms"].notna()]
    lat_max = float(timed["median_ms"].max()) if len(timed) else 1.0
    loss_all = df["max_loss"].fillna(0.0)
    for cat in (ELIGIBLE, ACCURACY_FAILED, NOT_MEASURED):
        sub = timed[timed["category"] == cat]
        if sub.empty and cat != ELIGIBLE:
            continue
        fig.add_trace(
            go.Scattergl(
                x=sub["median_ms"],
                y=sub["max_loss"].fillna(0.0),
                mode="markers",
                name=f"{cat} ({len(sub)})",
                marker={**STYLE[cat], "size": 8},
                customdata=np.stack([sub["number"], sub["route"]], axis=-1) if len(sub) else None,
                hovertemplate="#%{customdata[0]}<br>%{x:.4g} ms, loss %{y:.3g}"
                "<br>%{customdata[1]}<extra></extra>",
            )
        )
    untimed = df[df["median_ms"].isna()]
    for cat in (FAILED, ACCURACY_FAILED, NOT_MEASURED):
        sub = untimed[untimed["category"] == cat]
        if sub.empty:
            continue
        fig.add_trace(
            go.Scattergl(
                x=[lat_max * 1.08] * len(sub),
                y=loss_all[sub.index],
                mode="markers",
                name=f"{cat}, no latency ({len(sub)})",
                marker={**STYLE[cat], "size": 9, "symbol": "x" if cat == FAILED else "x-open"},
                customdata=np.stack([sub["number"], sub["state"], sub["error"]], axis=-1),
                hovertemplate="#%{customdata[0]} %{customdata[1]}<br>%{customdata[2]}"
                "<extra></extra>",
            )
        )
    front_src = timed[timed["category"] == ELIGIBLE]
    if len(front_src):
        mask = pareto_mask(front_src["median_ms"], front_src["max_loss"])
        front = front_src[mask].sort_values("median_ms")
        fig.add_trace(
            go.Scatter(
                x=front["median_ms"],
                y=front["max_loss"].fillna(0.0),
                mode="lines",
                line={"shape": "hv", "color": "#2ca02c", "width": 2},
                name=f"Pareto front ({len(front)})",
                hoverinfo="skip",
            )
        )
    if epsilon is not None:
        fig.add_hline(
            y=epsilon,
            line={"dash": "dash", "color": "#d62728"},
            annotation_text=f"ε = {epsilon:g}",
            annotation_position="top left",
        )
    return _layout(
        fig, "Accuracy vs latency", "median latency (ms)", f"accuracy loss ({metric}, max over outputs)"
    )


def speedup_figure(df: pd.DataFrame, *, top: int = 30) -> go.Figure:
    """Speedup vs the default route with CI error bars, for the ``top`` eligible candidates."""
    import plotly.graph_objects as go

    sub = df[(df["category"] == ELIGIBLE) & df["speedup"].notna()]
    sub = sub.sort_values("speedup", ascending=False).head(top)
    low = (sub["speedup"] - sub["speedup_ci_low"]).clip(lower=0).fillna(0)
    high = (sub["speedup_ci_high"] - sub["speedup"]).clip(lower=0).fillna(0)
    fig = go.Figure(
        go.Bar(
            x=[f"#{n}" for n in sub["number"]],
            y=sub["speedup"],
            error_y={"type": "data", "symmetric": False, "array": high, "arrayminus": low},
            customdata=sub["route"],
            hovertemplate="%{x}: %{y:.3f}x<br>%{customdata}<extra></extra>",
            marker_color=["#2ca02c" if n == 0 else "#1f77b4" for n in sub["number"]],
        )
    )
    fig.add_hline(y=1.0, line={"dash": "dot", "color": "#7f7f7f"}, annotation_text="default")
    fig.update_xaxes(type="category")
    return _layout(fig, f"Speedup vs default (top {len(sub)}, 95 % CI)", "candidate", "speedup (x)")


def history_figure(history: pd.DataFrame) -> go.Figure:
    """Median latency of every eligible candidate in study order and the best so far."""
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.add_trace(
        go.Scattergl(
            x=history["number"],
            y=history["median_ms"],
            mode="markers",
            name="eligible candidate",
            marker={"color": "#1f77b4", "size": 6, "opacity": 0.6},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=history["number"],
            y=history["best_ms"],
            mode="lines",
            line={"shape": "hv", "color": "#d62728"},
            name="best so far",
        )
    )
    return _layout(fig, "Best-so-far history", "candidate number", "median latency (ms)")


def knob_effect_figure(df: pd.DataFrame, knob: str) -> go.Figure:
    """Latency by value of one knob (box per value over eligible candidates, points shown)."""
    import plotly.graph_objects as go

    col = f"knob:{knob}"
    sub = df[(df["category"] == ELIGIBLE) & df["median_ms"].notna()]
    fig = go.Figure()
    if col in sub:
        for value, grp in sub.groupby(sub[col].fillna("(default)"), sort=True):
            fig.add_trace(
                go.Box(
                    y=grp["median_ms"],
                    name=f"{value} (n={len(grp)})",
                    boxpoints="all" if len(grp) <= 200 else "outliers",
                    jitter=0.3,
                )
            )
    return _layout(fig, f"Latency by value of {knob}", "value", "median latency (ms)")


def samples_histogram(samples_ms: Sequence[float], *, title: str = "Raw latency samples") -> go.Figure:
    """Histogram of one candidate's raw samples with its median marked."""
    import numpy as np
    import plotly.graph_objects as go

    fig = go.Figure(go.Histogram(x=list(samples_ms), nbinsx=40, marker_color="#1f77b4"))
    if len(samples_ms):
        fig.add_vline(
            x=float(np.median(samples_ms)),
            line={"dash": "dash", "color": "#d62728"},
            annotation_text="median",
        )
    return _layout(fig, f"{title} (n={len(samples_ms)})", "latency per call (ms)", "count")


def overlaid_samples_figure(samples: Mapping[str, Sequence[float]]) -> go.Figure:
    """Overlaid, normalized histograms of several candidates' raw samples."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for label, values in samples.items():
        fig.add_trace(
            go.Histogram(
                x=list(values), name=f"{label} (n={len(values)})", opacity=0.55,
                histnorm="probability density", nbinsx=40,
            )
        )
    fig.update_layout(barmode="overlay")
    return _layout(fig, "Latency distributions", "latency per call (ms)", "density")
