"""optuna-dashboard's exploration views for build routes (no streamlit).

Parallel coordinates over knobs, a per-candidate timeline (build, measure, re-validation), the
empirical distribution (EDF) of latencies, and figures over several studies (their table:
:mod:`gptuner_core.views.study_comparison`). Every figure
bounds what it sends to the browser (``max_*``), so a 100,000-candidate study stays responsive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import pandas as pd
    import plotly.graph_objects as go

from gptuner_core.views import colors as latency_colors
from gptuner_core.views._frames import ELIGIBLE
from gptuner_core.views._frames import knob_columns
from gptuner_core.views.figures import _layout
from gptuner_core.views.figures import latency_axis
from gptuner_core.views.knob_views import levels as value_levels
from gptuner_core.views.legend import legend_below


def _spread_sample(df: pd.DataFrame, n: int, by: str = "median_ms") -> pd.DataFrame:
    """At most ``n`` rows: the best quarter by ``by`` plus an even spread of the rest."""
    if len(df) <= n:
        return df
    ordered = df.sort_values(by)
    best = ordered.head(n // 4)
    rest = ordered.iloc[n // 4:]
    step = max(1, len(rest) // (n - len(best)))
    return ordered.loc[best.index.append(rest.index[::step])].head(n)


#: line colours with a selection: the others faint grey, the selected ones red (drawn last, on top)
OTHERS_COLOR = "rgba(170,170,170,0.35)"
SELECTED_COLOR = "#d62728"
#: lines without a selection are drawn in this many latency bands, each one Viridis colour
LATENCY_BANDS = 8


@dataclass(frozen=True)
class ParallelAxis:
    """One vertical axis: its label, and where its values sit on it (0 bottom, 1 top)."""

    label: str
    positions: tuple[float, ...]  # one per line, in :attr:`ParallelInfo.numbers` order
    ticks: tuple[tuple[float, str], ...]  # (position, text): every level, or min / mid / max


@dataclass(frozen=True)
class ParallelInfo:
    """What the parallel-coordinates figure draws: one line per candidate across the axes."""

    axes: tuple[ParallelAxis, ...]
    numbers: tuple[int, ...]  # candidate of each line, selected ones last
    latency_ms: tuple[float, ...]
    selected: tuple[bool, ...]
    measured: int  # candidates with a latency (lines drawn: len(numbers))


def _axis_title(label: str, width: int = 14) -> str:
    """A knob's name broken after its namespace and between words of at most about ``width``
    characters a line (``-inductor:<br>coordinate_<br>descent_tuning``), so neighbouring axes'
    titles do not run into each other."""
    head, sep, tail = label.rpartition(":")
    lines, line = [], ""
    for word in tail.replace("_", "_\n").replace(".", ".\n").split("\n"):
        if line and len(line) + len(word) > width:
            lines.append(line)
            line = ""
        line += word
    lines.append(line)
    return (f"{head}{sep}<br>" if sep else "") + "<br>".join(lines)


def _spaced(n: int) -> list[float]:
    return [0.5] if n <= 1 else [i / (n - 1) for i in range(n)]


def parallel_coordinates_info(df: pd.DataFrame, *, max_lines: int = 3000,
                              selected: Sequence[int] = ()) -> ParallelInfo:
    """One axis per knob that varies (every one, words and numbers alike; numbers in numeric
    order), then latency and loss; one line per measured candidate (at most ``max_lines`` plus
    the ``selected`` ones, which come last so they are drawn on top)."""
    import numpy as np
    import pandas as pd

    timed = df[df["median_ms"].notna()]
    sub = _spread_sample(timed, max_lines)
    chosen = {int(n) for n in selected}
    if chosen:
        extra = timed[timed["number"].isin(chosen) & ~timed.index.isin(sub.index)]
        sub = sub if extra.empty else pd.concat([sub, extra])
        mark = sub["number"].isin(chosen)
        sub = pd.concat([sub[~mark], sub[mark]])
    axes = []
    for knob in knob_columns(df):
        values = sub[f"knob:{knob}"].fillna("(default)").astype(str)
        levels = value_levels(values)
        at = dict(zip(levels, _spaced(len(levels)), strict=True))
        axes.append(ParallelAxis(knob, tuple(values.map(at)), tuple((at[v], v) for v in levels)))

    def numeric(label: str, values: pd.Series, fmt: str) -> ParallelAxis:
        lo, hi = float(values.min()), float(values.max())
        span = hi - lo
        pos = ((values - lo) / span) if span > 0 else values * 0 + 0.5
        ticks = ((0.0, format(lo, fmt)), (0.5, format(lo + span / 2, fmt)), (1.0, format(hi, fmt))) \
            if span > 0 else ((0.5, format(lo, fmt)),)
        return ParallelAxis(label, tuple(float(v) for v in pos), ticks)

    axes.append(numeric("median ms", sub["median_ms"].astype(float), ".4g"))
    if sub["max_loss"].notna().any():
        loss = np.log10(sub["max_loss"].fillna(0.0).astype(float).clip(lower=1e-12))
        axes.append(numeric("log10 loss", loss, ".3g"))
    return ParallelInfo(axes=tuple(axes), numbers=tuple(int(n) for n in sub["number"]),
                        latency_ms=tuple(float(v) for v in sub["median_ms"]),
                        selected=tuple(int(n) in chosen for n in sub["number"]),
                        measured=len(timed))


def parallel_coordinates_figure(df: pd.DataFrame, *, max_lines: int = 3000,
                                selected: Sequence[int] = ()) -> go.Figure:
    """:func:`parallel_coordinates_info` drawn as SVG lines, coloured by latency (darker is
    faster); with ``selected`` candidates every line stays, the selected ones red and on top,
    the others faint grey. Not plotly's ``parcoords``: it draws through WebGL, which took 2-5 s
    to draw even 50 lines where the browser renders WebGL in software (headless Chromium, a
    machine without a GPU); these lines take 0.2-0.5 s. Each line's points carry its candidate
    number (``customdata``), shown on hover."""
    import numpy as np
    import plotly.graph_objects as go

    info = parallel_coordinates_info(df, max_lines=max_lines, selected=selected)
    k = len(info.axes)
    pos = np.array([a.positions for a in info.axes], dtype=float).T.reshape(len(info.numbers), k)
    numbers = np.array(info.numbers, dtype=int)
    latency = np.array(info.latency_ms, dtype=float)

    def lines(rows: np.ndarray, name: str, color: str) -> go.Scatter:
        gap = np.full((int(rows.sum()), 1), np.nan)
        xs = np.tile(np.append(np.arange(k, dtype=float), np.nan), int(rows.sum()))
        ys = np.hstack([pos[rows], gap]).ravel()
        custom = np.repeat(numbers[rows], k + 1)
        return go.Scatter(x=xs, y=ys, customdata=custom, mode="lines", name=name,
                          line={"color": color, "width": 1}, showlegend=False,
                          hovertemplate="#%{customdata}<extra></extra>")

    fig = go.Figure()
    mark = np.array(info.selected, dtype=bool)
    if mark.any():
        fig.add_trace(lines(~mark, "others", OTHERS_COLOR))
        fig.add_trace(lines(mark, "selected", SELECTED_COLOR))
    elif len(latency):
        lo, hi = float(latency.min()), float(latency.max())
        band = np.minimum(((latency - lo) / ((hi - lo) or 1.0) * LATENCY_BANDS).astype(int),
                          LATENCY_BANDS - 1)
        colors = latency_colors.latency_colors(LATENCY_BANDS)
        for b in reversed(range(LATENCY_BANDS)):  # the fastest drawn last, on top
            if (band == b).any():
                fig.add_trace(lines(band == b, f"latency band {b + 1}", colors[b]))
        fig.add_trace(go.Scatter(  # the colour bar alone: no point drawn
            x=[None], y=[None], mode="markers", name="ms", showlegend=False, hoverinfo="skip",
            marker=latency_colors.latency_marker([lo, hi], low=lo, high=hi)))
    for i, axis in enumerate(info.axes):
        fig.add_shape(type="line", x0=i, x1=i, y0=0, y1=1, line={"color": "#444", "width": 1})
        for at, text in axis.ticks:
            fig.add_annotation(x=i, y=at, text=text, showarrow=False, xanchor="right", xshift=-4,
                               font={"size": 10}, bgcolor="rgba(255,255,255,0.7)")
    # room on the left for the first axis's values, written to its left
    left = min(240, max(80, 12 + 6 * max((len(t) for _, t in info.axes[0].ticks), default=0)))
    shown = f"{len(info.numbers):,} of {info.measured:,} measured" \
        if len(info.numbers) < info.measured else f"{len(info.numbers):,} measured"
    if mark.any():
        shown += f"; {int(mark.sum())} selected in red"
    fig.update_layout(
        title=f"Parallel coordinates ({shown} candidates)", height=460, template="none",
        paper_bgcolor="white", plot_bgcolor="white", font={"family": "sans-serif", "size": 12},
        margin={"l": left, "r": 90, "t": 60, "b": 70}, hovermode="closest",  # room for the bar title
        xaxis={"tickvals": list(range(k)), "ticktext": [_axis_title(a.label) for a in info.axes],
               "tickangle": 0, "tickfont": {"size": 11}, "showgrid": False, "zeroline": False,
               "range": [-0.6, k - 0.6], "fixedrange": True},
        yaxis={"visible": False, "range": [-0.05, 1.05], "fixedrange": True},
    )
    return legend_below(fig)


def timeline_frame(records: Sequence[Any], revalidation: Sequence[Mapping[str, Any]] = (),
                   baselines: Sequence[Mapping[str, Any]] = (), *, max_rows: int = 1500) -> pd.DataFrame:
    """Rows ``(label, phase, start, end)``: build and measure of each candidate (the last
    ``max_rows``), drift-sentinel re-measurements and the re-validation phase."""
    import pandas as pd

    rows = []
    recs = [r for r in records if r.started_at is not None][-max_rows:]
    for r in recs:
        t = float(r.started_at)
        build = float(r.build_time_s or 0.0)
        measure = float(r.measure_time_s or 0.0)
        if build:
            rows.append({"label": f"#{r.number}", "phase": "build", "start": t, "end": t + build,
                         "state": r.state.value})
        if measure:
            rows.append({"label": f"#{r.number}", "phase": "measure", "start": t + build,
                         "end": t + build + measure, "state": r.state.value})
        if not build and not measure and r.finished_at is not None:
            rows.append({"label": f"#{r.number}", "phase": "other", "start": t,
                         "end": float(r.finished_at), "state": r.state.value})
    for b in baselines:
        if b.get("time") is not None:
            t = float(b["time"])
            rows.append({"label": "drift sentinel", "phase": "re-measure default",
                         "start": t - float(b.get("duration_s") or 1.0), "end": t, "state": ""})
    last_end = max((float(r.finished_at) for r in recs if r.finished_at), default=None)
    for ev in revalidation:
        if ev.get("time") is not None and last_end is not None:
            rounds = len(ev.get("rounds") or []) if isinstance(ev.get("rounds"), list) else ""
            rows.append({"label": "re-validation", "phase": "re-validation",
                         "start": last_end, "end": float(ev["time"]),
                         "state": f"{rounds} rounds" if rounds else ("error" if ev.get("error") else "")})
    return pd.DataFrame(rows, columns=["label", "phase", "start", "end", "state"])


PHASE_COLORS = {"build": "#ff7f0e", "measure": "#1f77b4", "other": "#7f7f7f",
                "re-measure default": "#9467bd", "re-validation": "#2ca02c"}


def timeline_figure(frame: pd.DataFrame) -> go.Figure:
    """Horizontal bars per candidate on a wall-clock axis (seconds since the first start)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    t0 = float(frame["start"].min()) if len(frame) else 0.0
    for phase, grp in frame.groupby("phase", sort=False):
        fig.add_trace(go.Bar(
            y=grp["label"], x=grp["end"] - grp["start"], base=grp["start"] - t0, orientation="h",
            name=str(phase), marker_color=PHASE_COLORS.get(str(phase), "#7f7f7f"),
            hovertext=[f"{lab} {phase}: {e - s:.2f} s {st}" for lab, s, e, st in
                       zip(grp["label"], grp["start"], grp["end"], grp["state"], strict=True)],
            hoverinfo="text",
        ))
    n = frame["label"].nunique() if len(frame) else 0
    fig.update_layout(barmode="overlay", height=min(1200, 160 + 14 * n))
    fig.update_yaxes(autorange="reversed", type="category")
    return _layout(fig, "Timeline: build, measure and re-validation", "seconds since the first start",
                   "candidate")


def edf_points(latencies: Sequence[float], *, max_points: int = 1000) -> tuple[list[float], list[float]]:
    """Sorted latencies and their cumulative fraction, thinned to ``max_points`` quantiles, from
    ``(fastest, 0)``: a step curve drawn from its first point started at 1/n, which read as
    "1/n of the candidates at the fastest latency"."""
    import numpy as np

    x = np.sort(np.asarray([v for v in latencies if v == v], dtype=float))
    if not len(x):
        return [], []
    y = np.arange(1, len(x) + 1) / len(x)
    if len(x) > max_points - 1:  # room for the (fastest, 0) point
        idx = np.unique(np.linspace(0, len(x) - 1, max(max_points - 1, 2)).round().astype(int))
        x, y = x[idx], y[idx]
    return [float(x[0]), *x.tolist()], [0.0, *y.tolist()]


def log_ticks(lo: float, hi: float) -> dict[str, list]:
    """Tick values and labels for a log axis spanning ``10**lo``..``10**hi``: 1, 2, 5 of each
    decade (every digit when that gives fewer than four), each labelled in full. plotly labels
    the in-between ticks of a log axis with their first digit only ("2" for 0.2 beside "1")."""
    import math

    def ticks(mantissas: tuple[int, ...]) -> list[float]:
        out = []
        for k in range(math.floor(lo), math.ceil(hi) + 1):
            out += [m * 10.0 ** k for m in mantissas if lo <= math.log10(m * 10.0 ** k) <= hi]
        return out

    vals = ticks((1, 2, 5))
    if len(vals) < 4:
        vals = ticks(tuple(range(1, 10)))
    return {"tickvals": vals, "ticktext": [f"{v:.3g}" for v in vals]}


#: room on each side of the EDF's log axis, a fraction of its span in decades (at least 0.05 of
#: a decade): the first and last steps sat on the plot's edges
EDF_PAD = 0.05


def edf_figure(frames: Mapping[str, pd.DataFrame], *, eligible_only: bool = True) -> go.Figure:
    """Empirical distribution of median latencies, one curve per study (or per label)."""
    import math

    import plotly.graph_objects as go

    fig = go.Figure()
    shown: list[float] = []
    for label, df in frames.items():
        sub = df[df["category"] == ELIGIBLE] if eligible_only and "category" in df else df
        x, y = edf_points(sub["median_ms"].dropna().tolist())
        shown += [v for v in x if v > 0]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line={"shape": "hv"},
                                 name=f"{label} (n={len(sub):,})"))
    fig.update_xaxes(type="log")
    if shown:
        lo, hi = math.log10(min(shown)), math.log10(max(shown))
        pad = max((hi - lo) * EDF_PAD, 0.05)
        fig.update_xaxes(range=[lo - pad, hi + pad], **log_ticks(lo - pad, hi + pad))
    fig.update_yaxes(range=[0.0, 1.04], tickformat=".0%")
    return _layout(fig, "Empirical distribution of latencies" + (" (eligible)" if eligible_only else ""),
                   "median latency (ms, log)", "fraction of candidates ≤ x")


def best_so_far_figure(frames: Mapping[str, pd.DataFrame]) -> go.Figure:
    """Best-so-far latency of several studies against the candidate number."""
    import plotly.graph_objects as go

    from gptuner_core.views._frames import best_so_far

    fig = go.Figure()
    for label, df in frames.items():
        h = best_so_far(df)
        h = h[h["best_ms"].diff().fillna(-1) != 0]  # only the improvements: small at any size
        fig.add_trace(go.Scatter(x=h["number"], y=h["best_ms"], mode="lines+markers",
                                 line={"shape": "hv"}, name=label))
    return _layout(fig, "Best so far, per study", "candidate number", "best median latency (ms)")


def landing_figure(df: pd.DataFrame, *, max_points: int = 1000) -> go.Figure:
    """Live chart: latency of the latest ``max_points`` candidates as they land (by category;
    few enough for SVG, which draws faster than starting WebGL) and the best so far."""
    import plotly.graph_objects as go

    from gptuner_core.views._frames import best_so_far
    from gptuner_core.views.figures import STYLE
    from gptuner_core.views.figures import scatter_class

    fig = go.Figure()
    timed = df[df["median_ms"].notna()].sort_values("number").tail(max_points)
    for cat, grp in timed.groupby("category", sort=False):
        style = STYLE.get(str(cat), {"color": "#7f7f7f", "symbol": "circle"})
        fig.add_trace(scatter_class(len(grp))(x=grp["number"], y=grp["median_ms"], mode="markers",
                                   name=f"{cat} ({len(grp)})", marker={**style, "size": 7}))
    h = best_so_far(df)
    if len(h):
        h = h[h["best_ms"].diff().fillna(-1) != 0]
        last = int(df["number"].max())
        fig.add_trace(go.Scatter(x=[*h["number"], last], y=[*h["best_ms"], h["best_ms"].iloc[-1]],
                                 mode="lines", line={"shape": "hv", "color": "#d62728"},
                                 name="best so far"))
    fig.update_layout(height=360)
    fig.update_yaxes(type=latency_axis(timed["median_ms"]))
    n_timed = int(df["median_ms"].notna().sum())
    title = "Candidates as they land" + (f" (latest {len(timed):,} of {n_timed:,})"
                                          if len(timed) < n_timed else "")
    return _layout(fig, title, "candidate number", "median latency (ms)")
