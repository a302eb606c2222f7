"""Issue 39 item 7 (screenshots): every figure's legend at its foot, one latency colour scale,
the EDF from 0 with room at both ends of its log axis."""

from __future__ import annotations

import math

import plotly.graph_objects as go

from gptuner_core import views
from gptuner_core.views import colors
from gptuner_core.views import explore
from gptuner_core.views import figures
from gptuner_core.views import knob_views
from gptuner_core.views import legend


def test_legend_rows_count_wrapped_entries() -> None:
    fig = go.Figure([go.Scatter(name="x" * 40) for _ in range(5)])
    assert legend.legend_rows(fig, width_px=860) == 3  # 330 px each: two a row, five entries
    fig.data[0].showlegend = False
    assert legend.legend_rows(go.Figure()) == 0


def test_legend_below_anchors_to_the_figure_foot_with_room() -> None:
    fig = legend.legend_below(go.Figure([go.Scatter(name=f"study {i}" * 6) for i in range(8)]))
    lg = fig.layout.legend
    assert (lg.orientation, lg.yref, lg.y, lg.yanchor) == ("h", "container", 0.0, "bottom")
    assert fig.layout.margin.b >= legend.AXIS_ROOM_PX + legend.ROW_PX * legend.legend_rows(fig)


def _figures(ranked) -> dict[str, go.Figure]:
    knobs = [c.removeprefix("knob:") for c in ranked.columns if c.startswith("knob:")]
    records = []
    return {
        "speedup": figures.speedup_figure(ranked),
        "history": figures.history_figure(views.best_so_far(ranked)),
        "samples": figures.samples_histogram([1.0, 2.0, 3.0]),
        "overlaid": figures.overlaid_samples_figure({"#0": [1.0, 1.1], "#1": [0.9, 1.0]}),
        "contour": knob_views.contour_figure(ranked, knobs[0], knobs[1]),
        "rank": knob_views.rank_figure(ranked, knobs[0], knobs[1]),
        "slice": knob_views.slice_grid_figure(ranked),
        "knob effect": views.knob_effect_figure(ranked, knobs[0]),
        "accuracy": views.accuracy_latency_figure(ranked, epsilon=1e-3),
        "parallel": explore.parallel_coordinates_figure(ranked),
        "timeline": explore.timeline_figure(explore.timeline_frame(records)),
        "edf": explore.edf_figure({"a": ranked, "b": ranked}),
        "best so far": explore.best_so_far_figure({"a": ranked, "b": ranked}),
        "landing": explore.landing_figure(ranked),
    }


def test_every_figure_puts_its_legend_at_the_foot(ranked) -> None:
    """Defect: legends at ``y=-0.2`` of the plot sat on the x-axis title of short figures."""
    for name, fig in _figures(ranked).items():
        lg = fig.layout.legend
        assert (lg.yref, lg.yanchor, lg.orientation) == ("container", "bottom", "h"), name


def test_every_latency_colour_is_viridis_darker_faster_titled_median_ms(ranked) -> None:
    """Defect: Contour drew darker = slower, the parallel coordinates darker = faster; bars said
    "ms", "rank"."""
    figs = _figures(ranked)
    heat = figs["contour"].data[0]
    assert (heat.colorscale[0][1], heat.reversescale) == (go.Figure(go.Heatmap(
        colorscale="Viridis")).data[0].colorscale[0][1], False)
    assert heat.colorbar.title.text == "median ms"
    rank = figs["rank"].data[0].marker
    assert rank.reversescale is False and rank.colorbar.title.text == "median ms"
    assert list(rank.color) == list(figs["rank"].data[0].marker.color)
    bars = [t.marker for t in figs["parallel"].data if t.marker and t.marker.showscale]
    assert [b.colorbar.title.text for b in bars] == ["median ms"]
    speed = knob_views.contour_figure(ranked, *[c.removeprefix("knob:") for c in ranked.columns
                                                 if c.startswith("knob:")][:2], value="speedup")
    assert speed.data[0].reversescale is True  # a higher speed-up is the darker end
    assert colors.latency_colors(3)[0] != colors.latency_colors(3)[-1]


def test_edf_starts_at_zero_with_room_on_its_log_axis(ranked) -> None:
    """Defect: the curves started at 1/n (0.07, 0.17: read as "7 % at the fastest") and the
    last step sat on the plot's right edge."""
    x, y = explore.edf_points([3.0, 1.0, 2.0])
    assert (x[0], y[0]) == (1.0, 0.0) and y[-1] == 1.0
    fig = explore.edf_figure({"a": ranked})
    lo, hi = fig.layout.xaxis.range
    xs = [v for t in fig.data for v in t.x]
    assert fig.layout.xaxis.type == "log"
    assert lo < math.log10(min(xs)) and hi > math.log10(max(xs))
    assert tuple(fig.layout.yaxis.range)[0] <= 0.0 and tuple(fig.layout.yaxis.range)[1] > 1.0


def test_log_axis_ticks_are_labelled_in_full() -> None:
    """Defect: the EDF's log axis read "2 3 4 ... 9 1" for 0.2 ... 0.9, 1."""
    ticks = explore.log_ticks(math.log10(0.15), math.log10(1.4))
    assert ticks["ticktext"][:3] == ["0.2", "0.3", "0.4"] and "1" in ticks["ticktext"]
    wide = explore.log_ticks(-2.0, 1.0)
    assert wide["ticktext"] == ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10"]
