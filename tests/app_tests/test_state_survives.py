"""Issue 26: whatever was typed on New run survives page switches, and the preview is what Start
creates (study folder, name from the model)."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from tests.app_tests.conftest import APP
from tests.app_tests.conftest import open_new_run_sections


FILLED = {"nr_eps": "0.05", "nr_budget_max_candidates": "5", "nr_adv_seed": "7",
          "nr_name": "walk"}


def test_new_run_keeps_every_field_across_pages(empty_workspace, monkeypatch) -> None:
    """Defect: New run → Knob explorer → New run reset everything but the expression."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(empty_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("app_pages/2_New_run.py").run()
    open_new_run_sections(at)
    at.checkbox(key="nr_use_eps").check().run()
    for key, value in FILLED.items():
        at.text_input(key=key).set_value(value)
    at.selectbox(key="nr_search").set_value("random")
    at.selectbox(key="nr_keep").set_value("all").run()
    preview = next(c.value for c in at.code if "--study" in c.value)
    # the preview names the folder Start creates: <name>-<date>-<time>, not a bare <name>
    assert re.search(rf"{re.escape(str(empty_workspace))}/walk-\d{{8}}-\d{{6}}", preview), preview
    at.switch_page("app_pages/1_Knob_explorer.py").run()
    at.switch_page("app_pages/2_New_run.py").run()
    assert not at.exception, at.exception
    assert at.checkbox(key="nr_use_eps").value
    assert {k: at.text_input(key=k).value for k in FILLED} == FILLED
    assert at.selectbox(key="nr_search").value == "random"
    assert at.selectbox(key="nr_keep").value == "all"
    assert next(c.value for c in at.code if "--study" in c.value) == preview  # stable


def test_study_name_follows_the_model_until_typed(empty_workspace, monkeypatch) -> None:
    """Defect: choosing another model left the name (and preview) at the first model's."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(empty_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("app_pages/2_New_run.py").run()
    assert at.text_input(key="nr_name").value == "cnn_digits"
    at.selectbox(key="nr_sample").set_value("mlp_digits").run()
    assert at.text_input(key="nr_name").value == "mlp_digits"
    at.text_input(key="nr_name").set_value("mine").run()
    at.selectbox(key="nr_sample").set_value("cnn_digits").run()
    assert at.text_input(key="nr_name").value == "mine"


def _config(at: AppTest) -> dict:
    import json

    return json.loads(next(c.value for c in at.code if c.language == "json"))


def test_closed_sections_draw_nothing_and_keep_what_was_typed(empty_workspace, monkeypatch) -> None:
    """Issue 26 speed: the strategy's options, backend options and advanced settings (about half
    of New run's elements) went to the browser on every switch, open or closed. Closed, they now
    draw no input; what was typed while open still goes into the study, and is back on reopening."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(empty_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("app_pages/2_New_run.py").run()
    at.checkbox(key="nr_use_eps").check().run()
    inside = ("nr_adv_", "nr_meas_", "nr_sopt_", "nr_bopt_", "nr_keep", "nr_warm", "nr_output")
    assert not [w.key for w in [*at.text_input, *at.selectbox] if w.key and w.key.startswith(inside)]
    closed = _config(at)
    open_new_run_sections(at)
    at.run()
    assert _config(at) == closed  # the defaults, open or closed
    at.text_input(key="nr_adv_seed").set_value("7")
    at.text_input(key="nr_meas_max_time_s").set_value("3")
    at.text_input(key="nr_sopt_auto_max_trials").set_value("4")
    at.selectbox(key="nr_keep").set_value("all").run()
    typed = _config(at)
    assert typed["seed"] == 7 and typed["keep_artifacts"] == "all", typed
    assert typed["measurement"]["max_time_s"] == 3 and typed["strategy_options"]["max_trials"] == 4
    for key in ("nr_adv_open", "nr_bopt_open", "nr_sopt_open_auto"):
        at.session_state[key] = False
    at.run()
    assert not [w.key for w in [*at.text_input, *at.selectbox] if w.key and w.key.startswith(inside)]
    assert _config(at) == typed
    at.switch_page("app_pages/1_Knob_explorer.py").run()
    at.switch_page("app_pages/2_New_run.py").run()
    assert _config(at) == typed
    open_new_run_sections(at)
    at.run()
    assert at.text_input(key="nr_adv_seed").value == "7" and at.selectbox(key="nr_keep").value == "all"
    assert at.text_input(key="nr_meas_max_time_s").value == "3"
