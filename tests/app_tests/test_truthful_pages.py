"""Issue 26: Results' Importance tab draws the numbers Explain shows (it said "not in this build
yet" while Explain had an importance table for the same study)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from tests.app_tests.conftest import APP


def _page(page: str, ws, monkeypatch) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.session_state[state.STUDY] = "digits-study"
    at.run()
    return at.switch_page(page).run()


def test_importance_tab_shows_explains_numbers(finished_workspace, monkeypatch) -> None:
    at = _page("pages/4_Results.py", finished_workspace, monkeypatch)
    at.segmented_control(key="res_view").set_value("Importance").run()
    assert not at.exception, at.exception
    assert not any("not in this build" in i.value for i in at.info)
    shown = next(d.value for d in at.dataframe if "importance" in d.value.columns)
    at.switch_page("pages/7_Explain.py").run()
    explained = next(d.value for d in at.dataframe if "importance" in d.value.columns)
    assert shown.round(6).to_dict("records") == explained.round(6).to_dict("records")
    assert len(shown) >= 2
