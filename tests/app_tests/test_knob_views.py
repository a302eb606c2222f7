"""Results' Contour, Rank and Slice views on a real small study, and the shared selection."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from tests.app_tests.conftest import APP


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _parallel_lines(at: AppTest) -> dict[str, list[int]]:
    """{trace name: candidate numbers of its lines} of the Parallel coordinates chart, which
    draws SVG lines, never WebGL (``parcoords`` took 2-5 s to draw in a browser without a GPU)."""
    (fig,) = [c for c in _charts(at) if c["layout"]["title"]["text"].startswith("Parallel")]
    assert not [t["type"] for t in fig["data"] if t.get("type") == "parcoords" or "gl" in t.get("type", "")]
    return {t["name"]: sorted({int(n) for n in _values(t["customdata"])})
            for t in fig["data"] if t.get("mode") == "lines"}


def test_knob_views_render_and_highlight(finished_workspace, monkeypatch) -> None:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(finished_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.SELECTED] = {"digits-study": [2]}
    at.run()
    at.switch_page("app_pages/4_Results.py").run()
    assert not at.exception, at.exception
    for view, title in (("Contour", "Contour"), ("Rank", "Rank of latency"), ("Slice", "Slice")):
        at.segmented_control(key="res_view").set_value(view).run()
        assert not at.exception, (view, at.exception)
        titles = [c["layout"]["title"]["text"] for c in _charts(at)]
        assert any(t.startswith(title) for t in titles), (view, titles)
        assert any("#2" in m.value for m in at.caption), view  # the selection bar
        if view == "Contour":  # the two most important knobs (Importance tab) by default
            assert any("intra_op_threads × -ort:graph_optimization_level" in t for t in titles)
    at.segmented_control(key="res_view").set_value("Contour").run()
    at.selectbox(key="res_kx_digits-study").set_value("-ort:fp16_weights").run()
    assert not at.exception, at.exception
    assert any("fp16_weights" in t["layout"]["title"]["text"] for t in _charts(at))
    at.segmented_control(key="res_view").set_value("Accuracy vs latency").run()
    names = [t.get("name", "") for c in _charts(at) for t in c["data"]]
    assert any(n.startswith("selected (") for n in names), names
    at.button(key="res_sel_clear").click().run()
    assert not at.exception and state.SELECTED not in at.session_state or \
        "digits-study" not in at.session_state[state.SELECTED]


def test_a_chart_selection_becomes_the_studys_selection(finished_workspace, monkeypatch) -> None:
    """Points a chart reports selected (box/lasso/click) are shared; an emptied chart keeps them."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(finished_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state["res_view"] = "Slice"
    at.run()
    at.switch_page("app_pages/4_Results.py").run()
    # the browser sends a 2-D customdata row as an object ({"0": 3}); a 1-D one as a value
    points = [{"customdata": {"0": 3}, "point_index": 1}, {"customdata": 5}, {"customdata": [3]}]
    at.session_state["res_slice"] = {"selection": {"points": points, "box": [], "lasso": []}}
    at.run()
    assert not at.exception, at.exception
    assert at.session_state[state.SELECTED] == {"digits-study": [3, 5]}
    at.session_state["res_slice"] = {"selection": {"points": [], "box": [], "lasso": []}}
    at.run()
    assert at.session_state[state.SELECTED] == {"digits-study": [3, 5]}


def _values(v) -> list:
    """A figure array as a flat list (plotly writes numpy arrays as base64 ``bdata``)."""
    import base64

    import numpy as np

    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return [x[0] if isinstance(x, list) else x for x in v]


def _frame(workspace) -> object:
    """The Results page's frame of the fixture study at its configured ε."""
    from gptuner_core import views
    from gptuner_core.storage import open_store

    with open_store(workspace / "digits-study", readonly=True) as store:
        cfg, records = store.config(), tuple(store.candidates(with_samples=False))
    return views.apply_epsilon(views.candidates_frame(records), records, cfg.get("epsilon"),
                               metric=str(cfg.get("metric", "l2")), task_metric=cfg.get("task_metric"),
                               max_drop=cfg.get("max_task_drop"))


def test_every_view_draws_all_points_and_marks_the_selection(finished_workspace, monkeypatch) -> None:
    """Linked selection (issue 26): with #2 and #5 selected elsewhere, Parallel coordinates, Contour
    and Rank still draw every candidate they plot without a selection, and mark the two."""
    from gptuner_core.views.knob_views import SELECTED_SIZE
    from gptuner_core.views.knob_views import eligible_timed

    frame = _frame(finished_workspace)
    eligible = sorted(int(n) for n in eligible_timed(frame)["number"])
    measured = sorted(int(n) for n in frame[frame["median_ms"].notna()]["number"])
    chosen = eligible[1:3]  # two eligible candidates, neither the fastest nor #0 by rule
    assert len(chosen) == 2 and len(eligible) > 4
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(finished_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.SELECTED] = {"digits-study": chosen}
    at.run()
    at.switch_page("app_pages/4_Results.py").run()
    for view in ("Contour", "Rank"):
        at.segmented_control(key="res_view").set_value(view).run()
        assert not at.exception, (view, at.exception)
        points = [t for c in _charts(at) for t in c["data"] if t.get("name") == "candidates"]
        assert len(points) == 1, view
        numbers = [int(n) for n in _values(points[0]["customdata"])]
        assert sorted(numbers) == eligible, view  # all of them, not only the selection
        sizes = dict(zip(numbers, _values(points[0]["marker"]["size"]), strict=True))
        assert {n for n, s in sizes.items() if s == SELECTED_SIZE} == set(chosen), view
        opacity = dict(zip(numbers, _values(points[0]["marker"]["opacity"]), strict=True))
        assert all(opacity[n] < opacity[chosen[0]] for n in numbers if n not in chosen), view
    at.segmented_control(key="res_view").set_value("Parallel coordinates").run()
    assert not at.exception, at.exception
    lines = _parallel_lines(at)
    assert sorted(set().union(*lines.values())) == measured  # every measured candidate, one line each
    assert set(lines["selected"]) == set(chosen) and chosen[0] not in lines["others"]
    assert list(lines)[-1] == "selected"  # drawn last, on top
    at.button(key="res_sel_clear").click().run()
    at.segmented_control(key="res_view").set_value("Parallel coordinates").run()
    lines = _parallel_lines(at)
    assert "selected" not in lines and sorted(set().union(*lines.values())) == measured
    scales = [t for c in _charts(at) for t in c["data"] if (t.get("marker") or {}).get("showscale")]
    assert len(scales) == 1  # no selection: coloured by latency again, with its colour bar
