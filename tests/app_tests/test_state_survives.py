"""Issue 26: whatever was typed on New run survives page switches, and the preview is what Start
creates (study folder, name from the model)."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from tests.app_tests.conftest import APP


FILLED = {"nr_eps": "0.05", "nr_budget_max_candidates": "5", "nr_adv_seed": "7",
          "nr_name": "walk"}


def test_new_run_keeps_every_field_across_pages(empty_workspace, monkeypatch) -> None:
    """Defect: New run → Knob explorer → New run reset everything but the expression."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(empty_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("pages/2_New_run.py").run()
    at.checkbox(key="nr_use_eps").check().run()
    for key, value in FILLED.items():
        at.text_input(key=key).set_value(value)
    at.selectbox(key="nr_search").set_value("random")
    at.selectbox(key="nr_keep").set_value("all").run()
    preview = next(c.value for c in at.code if "--study" in c.value)
    # the preview names the folder Start creates: <name>-<date>-<time>, not a bare <name>
    assert re.search(rf"{re.escape(str(empty_workspace))}/walk-\d{{8}}-\d{{6}}", preview), preview
    at.switch_page("pages/1_Knob_explorer.py").run()
    at.switch_page("pages/2_New_run.py").run()
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
    at.switch_page("pages/2_New_run.py").run()
    assert at.text_input(key="nr_name").value == "cnn_digits"
    at.selectbox(key="nr_sample").set_value("mlp_digits").run()
    assert at.text_input(key="nr_name").value == "mlp_digits"
    at.text_input(key="nr_name").set_value("mine").run()
    at.selectbox(key="nr_sample").set_value("cnn_digits").run()
    assert at.text_input(key="nr_name").value == "mine"
