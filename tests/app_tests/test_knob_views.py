"""Results' Contour, Rank and Slice views on a real small study, and the shared selection."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from tests.app_tests.conftest import APP


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_knob_views_render_and_highlight(finished_workspace, monkeypatch) -> None:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(finished_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.SELECTED] = {"digits-study": [2]}
    at.run()
    at.switch_page("pages/4_Results.py").run()
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
    at.switch_page("pages/4_Results.py").run()
    points = [{"customdata": [3]}, {"customdata": [5]}, {"customdata": [3]}]
    at.session_state["res_slice"] = {"selection": {"points": points, "box": [], "lasso": []}}
    at.run()
    assert not at.exception, at.exception
    assert at.session_state[state.SELECTED] == {"digits-study": [3, 5]}
    at.session_state["res_slice"] = {"selection": {"points": [], "box": [], "lasso": []}}
    at.run()
    assert at.session_state[state.SELECTED] == {"digits-study": [3, 5]}
