"""Knob views of one study (no streamlit): contour, rank and slice grid over the varied knobs.

Every view is drawn from the study's own numbers: the eligible candidates' median latency (or
speed-up) against the knob values parsed from their routes (the ``knob:`` columns of
:func:`gptuner_core.views.candidates_frame`). Knob values are categorical (``fp16``, ``4``,
``(default)``), so axes are categorical; numeric values sort as numbers. Labels are never drawn
as annotations over the data: values go in hover text and tick labels are angled. ``selected``
candidate numbers (picked in another view) are drawn larger and opaque, the rest faded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Iterable
    from collections.abc import Sequence

    import pandas as pd
    import plotly.graph_objects as go

from gptuner_core.views import colors
from gptuner_core.views._frames import ELIGIBLE
from gptuner_core.views._frames import knob_columns
from gptuner_core.views.figures import _layout
from gptuner_core.views.figures import latency_axis


DEFAULT_VALUE = "(default)"
TICK_ANGLE = -35
SELECTED_SIZE = 13
PLAIN_SIZE = 7


def _value_key(v: str) -> tuple[int, float, str]:
    try:
        return (0, float(v), v)
    except ValueError:
        return (1, 0.0, v)


def levels(values: Iterable[str]) -> list[str]:
    """Distinct knob values in display order: numbers numerically, then words alphabetically."""
    return sorted(set(values), key=_value_key)


def knob_values(df: pd.DataFrame, knob: str) -> pd.Series:
    """The values of ``knob`` as text, ``(default)`` where the route leaves it out."""
    return df[f"knob:{knob}"].astype(object).where(df[f"knob:{knob}"].notna(), DEFAULT_VALUE).astype(str)


def eligible_timed(df: pd.DataFrame) -> pd.DataFrame:
    """Candidates that passed the gate and have a median latency."""
    mask = df["median_ms"].notna()
    if "category" in df:
        mask &= df["category"] == ELIGIBLE
    return df[mask]


def _thin(df: pd.DataFrame, max_points: int, selected: Sequence[int]) -> pd.DataFrame:
    """At most ``max_points`` rows (the fastest quarter and an even spread of the rest) plus
    the selected ones."""
    if len(df) <= max_points:
        return df
    ordered = df.sort_values("median_ms")
    best = ordered.head(max_points // 4)
    rest = ordered.iloc[max_points // 4:]
    step = max(1, len(rest) // (max_points - len(best)))
    keep = ordered.loc[best.index.append(rest.index[::step])].head(max_points)
    extra = df[df["number"].isin(list(selected)) & ~df.index.isin(keep.index)]
    return keep if extra.empty else ordered.loc[keep.index.append(extra.index)]


def _jitter(numbers: pd.Series, width: float = 0.3) -> list[float]:
    """A deterministic offset in [-width/2, width/2) per candidate number (no random state)."""
    return [((int(n) * 0.6180339887) % 1.0 - 0.5) * width for n in numbers]


def highlight(numbers: Sequence[int], selected: Sequence[int]) -> dict[str, list[float]]:
    """Marker ``size`` and ``opacity`` per point: selected candidates large and opaque; with a
    selection the others are faded, without one all are plain."""
    chosen = {int(n) for n in selected}
    if not chosen:
        return {"size": [PLAIN_SIZE] * len(numbers), "opacity": [0.85] * len(numbers)}
    return {"size": [SELECTED_SIZE if int(n) in chosen else PLAIN_SIZE for n in numbers],
            "opacity": [1.0 if int(n) in chosen else 0.3 for n in numbers]}


def _category_axis(fig: go.Figure, axis: str, names: list[str], row: int | None = None,
                   col: int | None = None) -> None:
    update = fig.update_xaxes if axis == "x" else fig.update_yaxes
    kwargs = {"row": row, "col": col} if row is not None else {}
    update(tickmode="array", tickvals=list(range(len(names))), ticktext=names,
           tickangle=TICK_ANGLE if axis == "x" else 0, range=[-0.6, len(names) - 0.4],
           automargin=True, **kwargs)


def contour_grid(df: pd.DataFrame, x_knob: str, y_knob: str, *, value: str = "median_ms"
                 ) -> tuple[list[str], list[str], list[list[float | None]], list[list[int]]]:
    """``(x levels, y levels, z, counts)`` over eligible candidates: z[i][j] is the median
    latency (``value="median_ms"``) or best speed-up (``value="speedup"``) of the candidates with
    ``y_knob = y levels[i]`` and ``x_knob = x levels[j]`` (None where no candidate has the pair)."""
    sub = eligible_timed(df)
    xs, ys = knob_values(sub, x_knob), knob_values(sub, y_knob)
    xl, yl = levels(knob_values(df, x_knob)), levels(knob_values(df, y_knob))
    grouped = sub.groupby([xs, ys])[value]
    agg = grouped.max() if value == "speedup" else grouped.median()
    counts = grouped.size()
    z = [[None if (x, y) not in agg.index else float(agg[(x, y)]) for x in xl] for y in yl]
    n = [[int(counts.get((x, y), 0)) for x in xl] for y in yl]
    return xl, yl, z, n


def contour_figure(df: pd.DataFrame, x_knob: str, y_knob: str, *, value: str = "median_ms",
                   selected: Sequence[int] = (), max_points: int = 3000) -> go.Figure:
    """Two knobs on categorical axes, colour = median latency (or best speed-up) of the
    eligible candidates with each pair of values; the candidates themselves as small markers."""
    import plotly.graph_objects as go

    xl, yl, z, n = contour_grid(df, x_knob, y_knob, value=value)
    what = "best screening speed-up" if value == "speedup" else "median latency (ms)"
    fmt = (lambda v: f"{v:.3f}x") if value == "speedup" else (lambda v: f"{v:.4g} ms")
    text = [[f"{x_knob}={x}<br>{y_knob}={y}<br>" + (f"{what}: {fmt(z[i][j])} (n={n[i][j]})"
                                                    if z[i][j] is not None else "no eligible candidate")
             for j, x in enumerate(xl)] for i, y in enumerate(yl)]
    fig = go.Figure(go.Heatmap(
        x=list(range(len(xl))), y=list(range(len(yl))), z=z, hovertext=text, hoverinfo="text",
        hoverongaps=True, **(colors.speedup_heatmap() if value == "speedup" else colors.latency_heatmap()),
    ))
    sub = _thin(eligible_timed(df), max_points, selected)
    if len(sub):
        xi = knob_values(sub, x_knob).map({v: i for i, v in enumerate(xl)})
        yi = knob_values(sub, y_knob).map({v: i for i, v in enumerate(yl)})
        jit = _jitter(sub["number"], 0.5)
        hl = highlight(sub["number"].tolist(), selected)
        fig.add_trace(go.Scatter(
            x=[a + j for a, j in zip(xi, jit, strict=True)],
            y=[b + j / 2 for b, j in zip(yi, jit, strict=True)], mode="markers",
            name="candidates", customdata=sub[["number"]].to_numpy(), showlegend=False,
            marker={"color": "white", "line": {"color": "black", "width": 1}, **hl},
            hovertext=[f"#{k}: {m:.4g} ms" for k, m in zip(sub["number"], sub["median_ms"], strict=True)],
            hoverinfo="text"))
    _category_axis(fig, "x", xl)
    _category_axis(fig, "y", yl)
    fig.update_layout(height=480)
    return _layout(fig, f"Contour: {what} by {x_knob} × {y_knob} (eligible)", x_knob, y_knob)


def rank_figure(df: pd.DataFrame, x_knob: str, y_knob: str, *, selected: Sequence[int] = (),
                max_points: int = 3000) -> go.Figure:
    """optuna-dashboard's rank plot: each eligible candidate at its pair of knob values,
    coloured by its median latency (the one latency scale: darker = faster; the hover gives its
    rank, 1 = fastest); the fastest are drawn on top."""
    import plotly.graph_objects as go

    sub = _thin(eligible_timed(df), max_points, selected)
    sub = sub.assign(_rank=sub["median_ms"].rank(method="min")).sort_values("_rank", ascending=False)
    xl, yl = levels(knob_values(df, x_knob)), levels(knob_values(df, y_knob))
    xi = knob_values(sub, x_knob).map({v: i for i, v in enumerate(xl)})
    yi = knob_values(sub, y_knob).map({v: i for i, v in enumerate(yl)})
    jit = _jitter(sub["number"], 0.6)
    hl = highlight(sub["number"].tolist(), selected)
    fig = go.Figure(go.Scatter(
        x=[a + j for a, j in zip(xi, jit, strict=True)],
        y=[b + j / 2 for b, j in zip(yi, jit, strict=True)], mode="markers",
        customdata=sub[["number"]].to_numpy(), name="candidates",
        marker={**colors.latency_marker(sub["median_ms"].tolist()),
                "line": {"color": "black", "width": 0.5}, **hl},
        hovertext=[f"#{k}: rank {int(r)}, {m:.4g} ms<br>{x_knob}={a}<br>{y_knob}={b}" for k, r, m, a, b in
                   zip(sub["number"], sub["_rank"], sub["median_ms"], knob_values(sub, x_knob),
                       knob_values(sub, y_knob), strict=True)],
        hoverinfo="text"))
    _category_axis(fig, "x", xl)
    _category_axis(fig, "y", yl)
    fig.update_layout(height=480)
    return _layout(fig, f"Rank of latency by {x_knob} × {y_knob} ({len(sub):,} eligible)",
                   x_knob, y_knob)


def slice_grid_figure(df: pd.DataFrame, knobs: Sequence[str] | None = None, *,
                      selected: Sequence[int] = (), cols: int = 3, max_points: int = 2000) -> go.Figure:
    """One small subplot per varied knob: x = knob value, y = median latency of the eligible
    candidates, colour = candidate number; log latency axis when latencies span decades."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    knobs = list(knob_columns(df) if knobs is None else knobs)
    sub = _thin(eligible_timed(df), max_points, selected)
    if any(len(k) > 24 for k in knobs):  # long knob names: fewer, wider columns, titles apart
        cols = min(cols, 2)
    cols = max(1, min(cols, len(knobs) or 1))
    rows = max(1, -(-len(knobs) // cols))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=knobs or None,
                        horizontal_spacing=0.08, vertical_spacing=min(0.3, 0.9 / rows))
    ytype = latency_axis(sub["median_ms"])
    _layout(fig, f"Slice: latency by each varied knob ({len(sub):,} eligible"
            + (", log latency" if ytype == "log" else "") + ")", "", "")
    hl = highlight(sub["number"].tolist(), selected)
    jit = _jitter(sub["number"], 0.5)
    for i, knob in enumerate(knobs):
        r, c = i // cols + 1, i % cols + 1
        names = levels(knob_values(df, knob))
        vals = knob_values(sub, knob)
        xi = vals.map({v: k for k, v in enumerate(names)})
        fig.add_trace(go.Scatter(
            x=[a + j for a, j in zip(xi, jit, strict=True)], y=sub["median_ms"], mode="markers",
            name=knob, showlegend=False, customdata=sub[["number"]].to_numpy(),
            marker={"color": sub["number"].tolist(), "coloraxis": "coloraxis", **hl},
            hovertext=[f"#{k}: {m:.4g} ms<br>{knob}={v}" for k, m, v in
                       zip(sub["number"], sub["median_ms"], vals, strict=True)],
            hoverinfo="text"), row=r, col=c)
        _category_axis(fig, "x", names, row=r, col=c)
        fig.update_yaxes(type=ytype, row=r, col=c, title_text="ms" if c == 1 else None)
    fig.update_annotations(font={"size": 11})
    fig.update_layout(height=max(320, 280 * rows), coloraxis={
        "colorscale": "Viridis", "colorbar": {"title": "candidate #"}})
    return fig
