"""No traceback on any page for any input: every text and number widget of every page is swept
through bad values, all at once per value (one rerun each), on a workspace with a finished study.
Numeric fields must answer with one clear line naming what was expected and what was typed."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from tests.app_tests.conftest import APP
from tests.app_tests.conftest import PAGES
from tests.app_tests.conftest import open_new_run_sections


pytestmark = pytest.mark.slow
BAD = ["0", "-1", "nan", "1e400", "", "garbage ⚠ text"]
#: widget keys of numeric fields (prefixes): each must show an "expected ..." line for garbage
NUMERIC = ("nr_eps", "nr_budget_", "nr_adv_", "res_eps", "kx_budget")


def _widgets(at: AppTest) -> list:
    return [w for w in [*at.text_input, *at.number_input, *at.text_area] if not w.disabled]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_sweep_bad_values(page, finished_workspace, monkeypatch) -> None:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(finished_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.STUDY] = "digits-study"
    at.run()
    at.switch_page(str(page.relative_to(APP.parent))).run()
    if page.name.startswith("2_"):
        open_new_run_sections(at)  # closed sections draw no input
        at.checkbox(key="nr_use_eps").check().run()
        assert at.text_input(key="nr_adv_seed")
    assert not at.exception, at.exception
    swept = 0
    for value in BAD:
        widgets = _widgets(at)
        for w in widgets:
            if w.type == "number_input":
                w.set_value(float(value) if value not in ("", "garbage ⚠ text") else 0.0)
            else:
                w.set_value(value)
        swept = max(swept, len(widgets))
        at.run()
        assert not at.exception, f"{page.name}, value {value!r}: {at.exception}"
        if value == "garbage ⚠ text":
            errors = " ".join(e.value for e in at.error)
            numeric = [w.key for w in widgets if w.key and w.key.startswith(NUMERIC)]
            for key in numeric:
                assert "expected" in errors and "garbage ⚠ text" in errors, (key, errors)
    # Overview, Live, Compare and Explain have no free-text or numeric input (pickers only)
    assert swept or page.name.startswith(("0_", "3_", "6_", "7_")), f"no input widget on {page.name}"


def test_new_run_negative_epsilon_never_kept(empty_workspace, monkeypatch) -> None:
    """Defect: a negative ε stayed on screen while the command kept the previous value. Now the
    field shows the typed value, one error line, and Start is disabled with the reason."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(empty_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("app_pages/2_New_run.py").run()
    at.checkbox(key="nr_use_eps").check().run()
    at.text_input(key="nr_eps").set_value("0.002").run()
    assert any('"epsilon": 0.002' in c.value for c in at.code)
    at.text_input(key="nr_eps").set_value("-0.5").run()
    assert not at.exception
    assert at.text_input(key="nr_eps").value == "-0.5"
    assert any("ε: expected a number > 0 (got '-0.5')" in e.value for e in at.error)
    assert not any('"epsilon"' in c.value for c in at.code)  # no settings with a stale value
    start = at.button(key="nr_start")
    assert start.disabled
    assert any("Start is disabled" in w.value and "got '-0.5'" in w.value for w in at.warning)


def test_new_run_bad_expression_gives_reason(empty_workspace, monkeypatch) -> None:
    """Defect: Start was disabled with no reason when the expression was bad."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(empty_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("app_pages/2_New_run.py").run()
    at.text_area(key="nr_expr_onnxruntime_text").set_value("-quant:mode=[off|int2]").run()
    assert at.button(key="nr_start").disabled
    reasons = " ".join(w.value for w in at.warning)
    assert "Start is disabled" in reasons and "expression" in reasons
    assert any("not allowed: int2" in e.value for e in at.error)


def test_results_epsilon_zero_no_traceback(finished_workspace, monkeypatch) -> None:
    """Defect: Results showed a raw traceback for ε = 0 (ConfigError: accuracy epsilon must be a
    number > 0)."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(finished_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("app_pages/4_Results.py").run()
    at.checkbox(key="res_gate").check().run()
    box = at.text_input(key="res_eps_digits-study")
    box.set_value("0").run()
    assert not at.exception, at.exception
    assert any("ε: expected a number > 0 (got '0')" in e.value for e in at.error)
