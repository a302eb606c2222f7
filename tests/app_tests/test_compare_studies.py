"""Compare → Studies (issue 39 item 7's screenshots): one column per study in a static table that
wraps, its verdict row the verdict's headline and confidence, never the raw "99.71% CI" message."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from gptuner_core.records import Winner
from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study
from tests.app_tests.conftest import APP
from tests.views_tests.test_study_comparison import WIN


def test_studies_side_by_side_show_the_verdict(tmp_path, monkeypatch) -> None:
    ws = tmp_path / "ws"
    write_synthetic_study(ws / "alpha_1", 8, seed=1, write_logs=False)
    beta = write_synthetic_study(ws / "beta", 8, seed=2, write_logs=False)
    with open_store(beta) as store:
        store.set_meta("winner", WIN)
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.session_state["cmp_mode"] = "Studies"
    at.switch_page("app_pages/6_Compare.py").run()
    assert not at.exception, at.exception
    table = at.table[0].value
    # the study names as they are (a header's underscores are not spaces here: seen in Chromium)
    assert list(table.columns)[0] == "field" and {"alpha_1", "beta"} <= set(table.columns)
    verdict = table.set_index("field").loc["verdict", "beta"]
    assert verdict.startswith(Winner.from_json(dict(WIN)).headline())
    assert "95% confidence" in verdict and "99.71" not in verdict
    assert not any("99.71" in str(v) for d in at.dataframe for v in d.value.to_numpy().ravel())
