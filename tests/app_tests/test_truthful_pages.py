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
    at = _page("app_pages/4_Results.py", finished_workspace, monkeypatch)
    at.segmented_control(key="res_view").set_value("Importance").run()
    assert not at.exception, at.exception
    assert not any("not in this build" in i.value for i in at.info)
    # static tables (they wrap; issue 39 item 7): the numbers as both pages show them
    shown = next(d.value for d in at.table if "importance" in d.value.columns)
    at.switch_page("app_pages/7_Explain.py").run()
    explained = next(d.value for d in at.table if "importance" in d.value.columns)
    assert shown.to_dict("records") == explained.to_dict("records")
    assert len(shown) >= 2


def test_results_never_asks_to_revalidate_a_revalidated_route(tmp_path, monkeypatch) -> None:
    """Defect: Results suggested "re-validate #1" for the route the study had re-validated."""
    from gptuner_core import views
    from gptuner_core.dashboard import data
    from gptuner_core.storage import open_store
    from gptuner_core.testing.synthetic_study import write_synthetic_study

    study = write_synthetic_study(tmp_path / "digits-study", 24, seed=3)
    loose = int(views.winner(data.ranked(study, 1.0))["number"])
    with open_store(study) as store:  # the study re-validated it: not faster than the default
        store.set_meta("winner", {"verdict": "not_faster", "number": 0, "speedup": 1.0,
                                  "ci": [0.99, 1.01], "best": loose, "best_speedup": 1.004,
                                  "best_ci": [0.99, 1.02], "rounds": 12, "significant": False,
                                  "message": "no route is significantly faster"})
    at = _page("app_pages/4_Results.py", tmp_path, monkeypatch)
    at.text_input(key="res_eps_digits-study").set_value("1").run()
    assert not at.exception, at.exception
    hints = [c.value for c in at.caption if "fastest eligible route" in c.value]
    assert hints and f"#{loose}" in hints[0] and "already re-validated" in hints[0], hints


def test_compare_knows_the_study_revalidated_the_winner(finished_workspace, monkeypatch) -> None:
    """Defect: Compare said "#1 has not been re-validated against #0 yet" right under the study
    verdict about #1."""
    at = _page("app_pages/6_Compare.py", finished_workspace, monkeypatch)
    assert not at.exception, at.exception
    lines = [c.value for c in at.caption]
    assert not any("has not been re-validated" in line for line in lines), lines
    assert any("re-validated against #0 by the study itself" in line for line in lines), lines


def test_live_draws_no_empty_chart_while_the_first_route_measures(tmp_path, monkeypatch) -> None:
    """Defect: the torch Live view showed an empty chart on axes −1…6 while still measuring."""
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState
    from gptuner_core.storage import open_store
    from gptuner_core.testing.synthetic_study import write_synthetic_study

    study = write_synthetic_study(tmp_path / "digits-study", 1, seed=3, status="running")
    with open_store(study) as store:
        store.put_candidate(CandidateRecord(number=0, requested_route="",
                                            state=CandidateState.RUNNING))
    at = _page("app_pages/3_Live.py", tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert not at.get("plotly_chart")
    assert any("No latency measured yet" in c.value for c in at.caption)


def test_overview_shows_each_studys_best_value(finished_workspace, monkeypatch) -> None:
    """optuna-dashboard's best value per study: the lowest median latency of a passing route."""
    from gptuner_core.storage import open_store

    with open_store(finished_workspace / "digits-study", readonly=True) as store:
        best = min(r.latency.median_ms for r in store.candidates()
                   if r.state.value == "COMPLETE" and r.latency is not None)
    at = _page("app_pages/0_Overview.py", finished_workspace, monkeypatch)
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "study" in d.value.columns)
    assert table.loc[table["study"] == "digits-study", "best ms"].iloc[0] == best
