"""Plotly figures for the results, route-trace and compare pages (no streamlit here).

Each function takes a frame from :mod:`gptuner_core.views._frames` (or plain sample lists) and
returns a ``plotly.graph_objects.Figure``. WebGL traces keep 10,000 points responsive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import pandas as pd
    import plotly.graph_objects as go

from gptuner_core.records import CandidateState
from gptuner_core.views._frames import ACCURACY_FAILED
from gptuner_core.views._frames import ELIGIBLE
from gptuner_core.views._frames import FAILED
from gptuner_core.views._frames import NOT_MEASURED
from gptuner_core.views.legend import legend_below


STYLE = {
    ELIGIBLE: {"color": "#1f77b4", "symbol": "circle"},
    ACCURACY_FAILED: {"color": "#d62728", "symbol": "diamond-open"},
    NOT_MEASURED: {"color": "#ff7f0e", "symbol": "square-open"},
    FAILED: {"color": "#7f7f7f", "symbol": "x"},
}



#: below this many markers a trace is drawn as SVG: faster than starting WebGL (which a browser
#: without a GPU emulates in software); above it, WebGL
WEBGL_FROM = 1500


def scatter_class(n: int) -> Any:
    """``go.Scatter`` for a few markers, ``go.Scattergl`` for many."""
    import plotly.graph_objects as go

    return go.Scattergl if n >= WEBGL_FROM else go.Scatter

def _layout(fig: go.Figure, title: str, x: str, y: str) -> go.Figure:
    """The one look of every figure: title, axis titles, white background, the legend at the
    figure's foot (:func:`~gptuner_core.views.legend.legend_below`)."""
    fig.update_layout(
        title=title,
        xaxis_title=x,
        yaxis_title=y,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        # a plain white look without the "plotly_white" template, whose deep copy costs ~0.1 s
        # per figure
        template="none",
        paper_bgcolor="white",
        plot_bgcolor="white",
        font={"family": "sans-serif", "size": 12},
    )
    fig.update_xaxes(gridcolor="#ebebeb", zerolinecolor="#dddddd", linecolor="#999999")
    fig.update_yaxes(gridcolor="#ebebeb", zerolinecolor="#dddddd", linecolor="#999999")
    return legend_below(fig)


def speedup_figure(df: pd.DataFrame, *, top: int = 30) -> go.Figure:
    """Screening speed-up vs the default route with its spread, for the ``top`` eligible routes.

    Screening: one process per route, not the verdict's re-validated interval (the title and
    axis say so). A DUPLICATE (the same artifact as an earlier candidate) is not another route:
    it is left out, so "top N" counts N routes."""
    import plotly.graph_objects as go

    sub = df[(df["category"] == ELIGIBLE) & df["speedup"].notna()
             & (df["state"] != CandidateState.DUPLICATE.value)]
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
    return _layout(fig, f"Screening speed-up vs default (top {len(sub)} routes; one process each, "
                   "not the verdict)", "candidate", "screening speed-up (x)")


def history_figure(history: pd.DataFrame, *, max_points: int = 5000) -> go.Figure:
    """Median latency of eligible candidates in study order (thinned to ``max_points``, every
    improvement kept) and the best so far."""
    import plotly.graph_objects as go

    points = history
    if len(history) > max_points:
        step = len(history) // max_points + 1
        improved = history["best_ms"].diff().fillna(-1) != 0
        points = history[(history.index % step == 0) | improved]
    fig = go.Figure()
    fig.add_trace(
        scatter_class(len(points))(
            x=points["number"],
            y=points["median_ms"],
            mode="markers",
            name="eligible candidate" + (f" ({len(points):,} of {len(history):,})"
                                         if len(points) < len(history) else ""),
            marker={"color": "#1f77b4", "size": 6, "opacity": 0.6},
        )
    )
    steps = history[history["best_ms"].diff().fillna(-1) != 0]
    if len(history):
        steps = pd_concat_last(steps, history)
    fig.add_trace(
        go.Scatter(
            x=steps["number"],
            y=steps["best_ms"],
            mode="lines",
            line={"shape": "hv", "color": "#d62728"},
            name="best so far",
        )
    )
    return _layout(fig, "Best-so-far history", "candidate number", "median latency (ms)")


def pd_concat_last(steps: pd.DataFrame, history: pd.DataFrame) -> pd.DataFrame:
    """``steps`` plus the last row of ``history`` (so the best-so-far line reaches the end)."""
    import pandas as pd

    return pd.concat([steps, history.tail(1)]).drop_duplicates(subset="number")


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
    """Overlaid, normalized histograms of several candidates' raw samples. The axis spans the
    bulk of every distribution (0.5th-99.5th percentile, widened a little): a few outliers at
    45 ms squeezed two distributions of 0.5 ms into one bar. The bins cover that span; the
    samples beyond it are left out of the bins and counted in the title."""
    import numpy as np
    import plotly.graph_objects as go

    fig = go.Figure()
    everything = np.concatenate([np.asarray(v, dtype=float) for v in samples.values()] or [[]])
    everything = everything[np.isfinite(everything)]
    title = "Latency distributions"
    if everything.size:
        lo, hi = (float(x) for x in np.percentile(everything, [0.5, 99.5]))
        pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1.0
        lo, hi = max(lo - pad, 0.0), hi + pad
        fig.update_xaxes(range=[lo, hi])
        outside = int(((everything < lo) | (everything > hi)).sum())
        if outside:
            title += f" ({outside} sample{'' if outside == 1 else 's'} outside, up to {everything.max():.4g} ms)"
    bins = {"start": fig.layout.xaxis.range[0], "end": fig.layout.xaxis.range[1],
            "size": (fig.layout.xaxis.range[1] - fig.layout.xaxis.range[0]) / 40} \
        if fig.layout.xaxis.range else None
    for label, values in samples.items():
        fig.add_trace(
            go.Histogram(
                x=list(values), name=f"{label} (n={len(values)})", opacity=0.55,
                histnorm="probability density", **({"xbins": bins} if bins else {"nbinsx": 40}),
            )
        )
    fig.update_layout(barmode="overlay")
    return _layout(fig, title, "latency per call (ms)", "density")


#: latencies spanning at least this ratio (max / min) are drawn on a log axis
DECADES = 30.0


def latency_axis(values: Any) -> str:
    """``"log"`` when the positive latencies span decades (a 0.04 ms route beside a 12 ms one
    would otherwise sit on the axis), else ``"linear"``."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    return "log" if arr.size >= 2 and arr.max() / arr.min() >= DECADES else "linear"
