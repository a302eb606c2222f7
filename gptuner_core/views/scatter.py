"""Accuracy × latency scatter and knob effects, readable at any size (no streamlit).

* The accuracy axis is logarithmic by default (one int4 outlier at loss 4.7 no longer flattens the
  rest); exact zeros sit on a floor a decade under the smallest loss, labelled in the hover.
* Points that coincide (same latency and loss to 4 significant digits) are grouped into one
  marker sized by its count, with the candidate numbers in the hover. Past ``max_points`` the
  grouping coarsens to a grid, so 100,000 candidates draw as at most a few thousand WebGL markers
  while the Pareto front, the winner and the default route are always drawn exactly.
* Hovers are wrapped to 60 characters and at most 6 lines, so they fit the chart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    import plotly.graph_objects as go

from gptuner_core.views._frames import ACCURACY_FAILED
from gptuner_core.views._frames import ELIGIBLE
from gptuner_core.views._frames import FAILED
from gptuner_core.views._frames import NOT_MEASURED
from gptuner_core.views._frames import pareto_mask
from gptuner_core.views.figures import STYLE
from gptuner_core.views.figures import _layout
from gptuner_core.views.figures import latency_axis
from gptuner_core.views.figures import scatter_class


HOVER_WIDTH = 60
HOVER_LINES = 6


def wrap_hover(text: str, width: int = HOVER_WIDTH, lines: int = HOVER_LINES) -> str:
    """``text`` wrapped on spaces to ``width`` characters, at most ``lines`` lines (``<br>``)."""
    text = str(text or "")
    if len(text) <= width:
        return text
    out: list[str] = []
    line = ""
    for word in text.split(" "):
        while len(word) > width:  # a token longer than a line is cut
            if line:
                out.append(line)
                line = ""
            out.append(word[:width])
            word = word[width:]
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            out.append(line)
            line = word
        if len(out) >= lines:
            break
    if line and len(out) < lines:
        out.append(line)
    if len(out) >= lines and " ".join(out) != text:
        out = [*out[: lines - 1], out[lines - 1][: width - 1] + "…"]
    return "<br>".join(out[:lines])


#: cells per decade of the log grid large studies are grouped on (a 520 px plot spans a few
#: decades, so a cell is about a marker's 7 px: finer cells only add markers the eye cannot
#: separate and the browser must draw twice; 40 drew 1,323 markers for 10,000 candidates)
GRID_PER_DECADE = 25


def loss_floor(loss: pd.Series) -> float:
    """Where exact-zero losses are drawn on a log axis: a decade under the smallest positive."""
    positive = loss[loss > 0]
    return float(positive.min()) / 10.0 if len(positive) else 1e-12


def group_points(sub: pd.DataFrame, y: pd.Series, *, coarse: bool) -> pd.DataFrame:
    """One row per marker: ``x``, ``y``, ``count``, ``numbers`` (first 8), ``route`` and
    ``first`` number of the group.

    Exact duplicates (4 significant digits) are merged; ``coarse`` merges on a log grid of
    :data:`GRID_PER_DECADE` cells per decade instead (large studies). Vectorized: one ``np.unique`` over the keys."""
    import numpy as np
    import pandas as pd

    x = sub["median_ms"].to_numpy(dtype=float)
    yy = y.to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if coarse:
            kx = np.round(np.log10(x) * GRID_PER_DECADE)
            ky = np.round(np.log10(np.maximum(yy, 1e-300)) * GRID_PER_DECADE)
        else:  # 4 significant digits
            def sig4(v: np.ndarray) -> np.ndarray:
                mag = np.floor(np.log10(np.abs(np.where(v == 0, 1.0, v))))
                return np.round(v / 10.0 ** (mag - 3))  * 10.0 ** (mag - 3)

            kx, ky = sig4(x), sig4(yy)
    keys = np.stack([kx, ky], axis=1)
    _, first, inverse, counts = np.unique(keys, axis=0, return_index=True, return_inverse=True,
                                          return_counts=True)
    inverse = inverse.ravel()
    numbers = sub["number"].to_numpy()
    routes = sub["route"].to_numpy()
    order = np.argsort(first)  # groups in the order they first appear
    remap = np.empty_like(order)
    remap[order] = np.arange(len(order))
    gid = remap[inverse]
    n_groups = len(first)
    gx = np.bincount(gid, weights=x, minlength=n_groups) / counts[order]
    gy = np.bincount(gid, weights=yy, minlength=n_groups) / counts[order]
    labels = np.array([f"#{n}" for n in numbers[first[order]]], dtype=object)
    multi = np.flatnonzero(counts[order] > 1)
    if len(multi):
        members: dict[int, list[int]] = {int(g): [] for g in multi}
        for idx in np.flatnonzero(np.isin(gid, multi)):
            lst = members[int(gid[idx])]
            if len(lst) < 8:
                lst.append(int(numbers[idx]))
        for g, lst in members.items():
            labels[g] = ", ".join(f"#{n}" for n in lst)
    return pd.DataFrame({"x": gx, "y": gy, "count": counts[order], "route": routes[first[order]],
                         "first": numbers[first[order]], "numbers": labels})


def group_untimed(sub: pd.DataFrame, y: pd.Series) -> pd.DataFrame:
    """Candidates without a latency, one marker per (state, first error line, loss): ``y``,
    ``count``, ``state``, ``error``, ``first`` number and ``numbers`` (first 8). Thousands of
    crashes with the same cause are one marker, not thousands drawn on one spot."""
    import pandas as pd

    keyed = pd.DataFrame({
        "number": sub["number"].to_numpy(), "state": sub["state"].astype(str).to_numpy(),
        "error": sub["error"].fillna("").astype(str).str.split("\n", n=1).str[0].to_numpy(),
        "y": y.to_numpy(dtype=float)})
    grouped = keyed.groupby(["state", "error", "y"], sort=False)
    out = grouped["number"].agg(first="first", count="size",
                                numbers=lambda s: ", ".join(f"#{n}" for n in s.iloc[:8]))
    return out.reset_index()


def _hover(g: pd.DataFrame, loss_label: pd.Series | None = None) -> list[str]:
    texts = []
    for i, row in enumerate(g.itertuples(index=False)):
        head = row.numbers + (f" … ({row.count} candidates)" if row.count > 8 else
                              f" ({row.count} identical)" if row.count > 1 else "")
        loss = loss_label.iloc[i] if loss_label is not None else f"{row.y:.3g}"
        texts.append(f"{head}<br>{row.x:.4g} ms · loss {loss}<br>{wrap_hover(row.route or '(default route)')}")
    return texts


def accuracy_latency_figure(
    df: pd.DataFrame,
    *,
    epsilon: float | None = None,
    metric: str = "loss",
    log_y: bool = True,
    winner: int | None = None,
    max_points: int = 5000,
    selected: Sequence[int] = (),
) -> go.Figure:
    """Accuracy loss vs median latency: one marker style per category, grouped duplicates, the
    Pareto front (markers, so a single point shows), the winner (star; only a route the verdict
    found faster, never the default) and the default route (#0, square) marked, the ε line, and candidates without a latency in a strip on the right."""
    import numpy as np
    import plotly.graph_objects as go

    fig = go.Figure()
    timed = df[df["median_ms"].notna()]
    lat_max = float(timed["median_ms"].max()) if len(timed) else 1.0
    raw_loss = df["max_loss"].fillna(0.0)
    floor = loss_floor(raw_loss) if log_y else 0.0

    def ys(s: pd.Series) -> pd.Series:
        return s.fillna(0.0).clip(lower=floor) if log_y else s.fillna(0.0)

    coarse = len(timed) > max_points
    for cat in (ELIGIBLE, ACCURACY_FAILED, NOT_MEASURED):
        sub = timed[timed["category"] == cat]
        if sub.empty and cat != ELIGIBLE:
            continue
        g = group_points(sub, ys(sub["max_loss"]), coarse=coarse) if len(sub) else None
        fig.add_trace(scatter_class(len(g) if g is not None else 0)(
            x=g["x"] if g is not None else [], y=g["y"] if g is not None else [], mode="markers",
            name=f"{cat} ({len(sub)})",
            marker={**STYLE[cat], "size": (7 + 3 * np.log2(g["count"])) if g is not None else 8},
            customdata=g[["first"]].to_numpy() if g is not None else None,
            hovertext=_hover(g) if g is not None else None, hoverinfo="text",
        ))
    untimed = df[df["median_ms"].isna()]
    for cat in (FAILED, ACCURACY_FAILED, NOT_MEASURED):
        sub = untimed[untimed["category"] == cat]
        if sub.empty:
            continue
        g = group_untimed(sub, ys(raw_loss[sub.index]))
        fig.add_trace(scatter_class(len(g))(
            x=[lat_max * 1.08] * len(g), y=g["y"], mode="markers",
            name=f"{cat}, no latency ({len(sub)})",
            marker={**STYLE[cat], "size": 9 + 3 * np.log2(g["count"]),
                    "symbol": "x" if cat == FAILED else "x-open"},
            customdata=g[["first"]].to_numpy(),
            hovertext=[f"{nums}{f' … ({c} candidates)' if c > 8 else ''} {st}<br>{wrap_hover(e)}"
                       for nums, c, st, e in zip(g["numbers"], g["count"], g["state"], g["error"],
                                                 strict=True)],
            hoverinfo="text",
        ))
    front_src = timed[timed["category"] == ELIGIBLE]
    if len(front_src):
        mask = pareto_mask(front_src["median_ms"], front_src["max_loss"])
        front = front_src[mask].sort_values("median_ms")
        fig.add_trace(go.Scatter(
            x=front["median_ms"], y=ys(front["max_loss"]), mode="lines+markers",
            line={"shape": "hv", "color": "#2ca02c", "width": 2},
            marker={"size": 12, "color": "rgba(0,0,0,0)", "line": {"color": "#2ca02c", "width": 2}},
            name=f"Pareto front ({len(front)})", customdata=front[["number"]].to_numpy(),
            hovertext=[f"front: #{n}, {m:.4g} ms" for n, m in
                       zip(front["number"], front["median_ms"], strict=True)], hoverinfo="text",
        ))
    for number, label, symbol, color in ((0, "default route #0", "square", "#444444"),
                                         (winner or None, f"winner #{winner}", "star", "#ffbf00")):
        row = timed[timed["number"] == number] if number is not None else timed.iloc[0:0]
        if len(row):
            fig.add_trace(go.Scatter(
                x=row["median_ms"], y=ys(row["max_loss"]), mode="markers+text", name=label,
                text=[label], textposition="top center", customdata=row[["number"]].to_numpy(),
                marker={"symbol": symbol, "size": 16, "color": color,
                        "line": {"color": "black", "width": 1}},
                hovertext=[f"{label}: {row['median_ms'].iloc[0]:.4g} ms<br>"
                           f"{wrap_hover(row['route'].iloc[0] or '(default route)')}"],
                hoverinfo="text",
            ))
    chosen = timed[timed["number"].isin(list(selected))]
    if len(chosen):
        fig.add_trace(go.Scatter(
            x=chosen["median_ms"], y=ys(chosen["max_loss"]), mode="markers",
            name=f"selected ({len(chosen)})", customdata=chosen[["number"]].to_numpy(),
            marker={"size": 18, "color": "rgba(0,0,0,0)", "line": {"color": "#e377c2", "width": 3}},
            hovertext=[f"selected #{n}, {m:.4g} ms" for n, m in
                       zip(chosen["number"], chosen["median_ms"], strict=True)], hoverinfo="text",
        ))
    if epsilon is not None:
        fig.add_hline(y=epsilon, line={"dash": "dash", "color": "#d62728"},
                      annotation_text=f"ε = {epsilon:g}", annotation_position="top left")
    y_title = f"accuracy loss ({metric}, max over outputs)"
    if log_y:
        fig.update_yaxes(type="log")
        y_title += f" — log; 0 drawn at {floor:.1g}"
    fig.update_xaxes(type=latency_axis(timed["median_ms"]))
    fig.update_layout(hoverlabel={"align": "left", "namelength": -1}, height=520)
    if coarse:
        fig.add_annotation(text=f"{len(timed):,} candidates grouped on a log grid", showarrow=False,
                           xref="paper", yref="paper", x=1, y=1.08, xanchor="right")
    return _layout(fig, "Accuracy vs latency", "median latency (ms)", y_title)


def knob_effect_figure(df: pd.DataFrame, knob: str) -> go.Figure:
    """Latency by value of one knob over **all** candidates: a box of eligible and one of
    accuracy-failed latencies per value, and failures without a latency as ``x`` markers on top,
    every value labelled with its counts (a value whose routes all failed still shows)."""
    import plotly.graph_objects as go

    col = f"knob:{knob}"
    fig = go.Figure()
    if col not in df:
        return _layout(fig, f"Latency by value of {knob}", "value", "median latency (ms)")
    values = df[col].fillna("(default)")
    labels: dict[Any, str] = {}
    for value, grp in df.groupby(values, sort=True):
        counts = grp["category"].value_counts()
        extra = [f"{int(counts[c])} {c}" for c in (ACCURACY_FAILED, FAILED, NOT_MEASURED)
                 if counts.get(c, 0)]
        labels[value] = f"{value} (n={len(grp)}" + (f"; {', '.join(extra)})" if extra else ")")
    x = values.map(labels)
    timed = df["median_ms"].notna()
    top = float(df.loc[timed, "median_ms"].max()) * 1.05 if timed.any() else 1.0
    for cat, color in ((ELIGIBLE, "#1f77b4"), (ACCURACY_FAILED, "#d62728")):
        sel = timed & (df["category"] == cat)
        if sel.any():
            fig.add_trace(go.Box(x=x[sel], y=df.loc[sel, "median_ms"], name=cat, marker_color=color,
                                 boxpoints="all" if sel.sum() <= 300 else "outliers", jitter=0.3,
                                 offsetgroup=cat))
    fail = ~timed
    if fail.any():
        fig.add_trace(go.Scatter(
            x=x[fail], y=[top] * int(fail.sum()), mode="markers", name="no latency (failed / rejected)",
            marker={"symbol": "x", "color": "#7f7f7f", "size": 9},
            hovertext=[f"#{n} {s}<br>{wrap_hover(e)}" for n, s, e in
                       zip(df.loc[fail, "number"], df.loc[fail, "state"], df.loc[fail, "error"],
                           strict=True)], hoverinfo="text"))
    fig.update_layout(boxmode="group")
    fig.update_xaxes(categoryorder="array", categoryarray=list(labels.values()))
    return _layout(fig, f"Latency by value of {knob} (all candidates)", "value", "median latency (ms)")
