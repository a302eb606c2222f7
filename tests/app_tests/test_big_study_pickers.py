"""Candidate pickers stay bounded on a big study (a selectbox of every label is megabytes per
rerun in the browser at 100,000 candidates) and a search reaches any candidate."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from gptuner_core.testing.synthetic_study import write_synthetic_study
from gptuner_core.views.picker import MAX_OPTIONS


ROOT = Path(__file__).resolve().parents[2]
N = 1_000


@pytest.fixture(scope="module")
def big_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("ws_big")
    write_synthetic_study(ws / "big", N, samples=5, write_logs=False)
    return ws


def _page(ws: Path, page: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state[state.STUDY] = "big"
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize(("page", "keys"), [("app_pages/5_Route_trace.py", ["rt_pick_big"]),
                                            ("app_pages/7_Explain.py", ["ex_pick_big", "ex_base_big"])])
def test_pickers_offer_a_bounded_list_and_find_any_candidate(big_workspace: Path, page: str,
                                                             keys: list[str], monkeypatch) -> None:
    at = _page(big_workspace, page, monkeypatch)
    for key in keys:
        assert len(at.selectbox(key=key).options) <= MAX_OPTIONS
    at.text_input(key=f"{keys[0]}_find").set_value("#777").run()
    box = at.selectbox(key=keys[0])
    assert box.options[0].startswith("#777 ")
    box.set_value(777).run()
    assert not at.exception, at.exception
    assert at.session_state[state.CANDIDATE] == 777


def test_compare_offers_a_bounded_list(big_workspace: Path, monkeypatch) -> None:
    at = _page(big_workspace, "app_pages/6_Compare.py", monkeypatch)
    pick = at.multiselect(key="cmp_pick_big")
    assert len(pick.options) <= MAX_OPTIONS and len(pick.value) == 2
    at.text_input(key="cmp_find_big").set_value("#901").run()
    pick = at.multiselect(key="cmp_pick_big")
    assert any(o.startswith("#901 ") for o in pick.options)
    before = list(pick.value)
    pick.select(901).run()
    assert not at.exception, at.exception
    assert at.multiselect(key="cmp_pick_big").value == [*before, 901]


def test_explain_page_reads_the_store_once(big_workspace: Path, monkeypatch) -> None:
    """The explanation is built from the page's cached snapshot: no second full read of the store
    with every raw sample (5 s of the 26 s first visit at 100,000 candidates)."""
    from gptuner_core.explain import study as explain_study

    def no_second_read(*_a, **_k):
        raise AssertionError("the Explain page re-read the whole store")

    monkeypatch.setattr(explain_study, "read_study", no_second_read)
    at = _page(big_workspace, "app_pages/7_Explain.py", monkeypatch)
    assert not at.exception, at.exception
    assert any("Knob effects" in h.value for h in at.subheader)


def test_overview_reads_no_candidate_records(big_workspace: Path, monkeypatch) -> None:
    """The study list needs counts, not records: at 100,000 candidates a full read is ~4.5 s per
    study and store revision (every commit of a running study)."""
    from gptuner_core.storage.sqlite import SQLiteStudyStore

    def no_full_read(*_a, **_k):
        raise AssertionError("Overview read every candidate record")

    monkeypatch.setattr(SQLiteStudyStore, "candidates", no_full_read)
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(big_workspace))
    at = AppTest.from_file(str(ROOT / "app_pages" / "0_Overview.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    row = at.dataframe[0].value.iloc[0]
    assert row["study"] == "big" and str(N) in " ".join(map(str, row.to_dict().values()))
