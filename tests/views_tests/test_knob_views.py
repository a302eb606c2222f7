"""Contour, rank and slice-grid views over the varied knobs; highlight of selected candidates."""

from __future__ import annotations

import pandas as pd

from gptuner_core import views
from gptuner_core.views import explore
from gptuner_core.views import knob_views as kv


def _frame(latencies, a, b) -> pd.DataFrame:
    return pd.DataFrame({"number": range(len(latencies)), "median_ms": latencies,
                         "category": views.ELIGIBLE, "knob:-a": a, "knob:-b": b})


def test_levels_sort_numbers_numerically() -> None:
    assert kv.levels(["10", "2", "fp16", "(default)", "1"]) == ["1", "2", "10", "(default)", "fp16"]


def test_contour_shape_and_medians() -> None:
    df = _frame([1.0, 3.0, 5.0, 2.0, 7.0], ["x", "x", "x", "y", "y"], ["1", "1", "2", "1", None])
    xl, yl, z, n = kv.contour_grid(df, "-a", "-b")
    assert xl == ["x", "y"] and yl == ["1", "2", "(default)"]
    assert z == [[2.0, 2.0], [5.0, None], [None, 7.0]] and n[0] == [2, 1]
    fig = kv.contour_figure(df, "-a", "-b", selected=[4])
    heat = fig.data[0]
    assert len(heat.z) == 3 and len(heat.z[0]) == 2
    assert list(fig.layout.xaxis.ticktext) == ["x", "y"] and fig.layout.xaxis.tickangle
    assert not fig.layout.annotations  # values in hover text, nothing drawn over the cells


def test_rank_colours_follow_latency() -> None:
    df = _frame([4.0, 1.0, 3.0, 2.0], ["x", "y", "x", "y"], ["1", "1", "2", "2"])
    trace = kv.rank_figure(df, "-a", "-b").data[0]
    ranks = dict(zip((int(c[0]) for c in trace.customdata), trace.marker.color, strict=True))
    assert ranks == {1: 1, 3: 2, 2: 3, 0: 4}
    assert int(trace.customdata[-1][0]) == 1  # the fastest drawn last, on top


def test_slice_grid_every_varied_knob_and_log_switch(ranked) -> None:
    fig = kv.slice_grid_figure(ranked)
    knobs = views.knob_columns(ranked)
    assert [t.name for t in fig.data] == knobs and len(knobs) >= 4
    assert fig.layout.yaxis.type == "linear"  # 0.7..1.4 ms: one decade at most
    wide = _frame([0.01, 0.1, 1.0, 5.0], ["x", "y", "x", "y"], ["1", "1", "2", "2"])
    assert kv.slice_grid_figure(wide).layout.yaxis.type == "log"


def test_selected_candidates_highlighted(ranked) -> None:
    chosen = int(kv.eligible_timed(ranked)["number"].iloc[0])
    for fig in (kv.slice_grid_figure(ranked, selected=[chosen]),
                kv.rank_figure(ranked, "-ort:execution_mode", "-ort:fp16_weights", selected=[chosen])):
        trace = fig.data[0]
        sizes = dict(zip((int(c[0]) for c in trace.customdata), trace.marker.size, strict=True))
        assert sizes[chosen] == kv.SELECTED_SIZE
        assert {s for n, s in sizes.items() if n != chosen} == {kv.PLAIN_SIZE}
        assert min(trace.marker.opacity) < 1.0


def test_parallel_coordinates_every_varied_knob_with_words() -> None:
    df = _frame([1.0, 2.0, 3.0], ["fp16", "int8", "fp16"], ["10", "2", "(x)"]).assign(max_loss=0.0)
    info = explore.parallel_coordinates_info(df)
    dims = {a.label: [text for _, text in a.ticks] for a in info.axes}
    assert dims["-a"] == ["fp16", "int8"] and dims["-b"] == ["2", "10", "(x)"]
    b = next(a for a in info.axes if a.label == "-b")
    assert b.positions == (0.5, 0.0, 1.0)  # "10", "2", "(x)" on the axis, bottom to top
    fig = explore.parallel_coordinates_figure(df)
    assert {t.type for t in fig.data} == {"scatter"}  # SVG lines, not WebGL parcoords
    assert sorted({int(n) for t in fig.data if t.mode == "lines" for n in t.customdata}) == [0, 1, 2]


def test_large_study_thinned_keeps_selection() -> None:
    n = 10_000
    df = _frame([1.0 + (i % 97) for i in range(n)], [str(i % 5) for i in range(n)],
                [str(i % 3) for i in range(n)])
    trace = kv.slice_grid_figure(df, selected=[9_999], max_points=500).data[0]
    numbers = [int(c[0]) for c in trace.customdata]
    assert len(numbers) <= 501 and 9_999 in numbers
