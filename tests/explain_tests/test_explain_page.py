"""AppTest of the Explain page on the real study: diff, effects, triage and its one-click expression."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gptuner_core.explain import explain


pytestmark = pytest.mark.slow
APP = Path(__file__).resolve().parents[2] / "app.py"


def _explain_page(cnn_study, monkeypatch) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(cnn_study.parent))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("app_pages/7_Explain.py").run()
    return at


def test_explain_page_renders_the_study(cnn_study, monkeypatch):
    at = _explain_page(cnn_study, monkeypatch)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    titles = [s.value for s in at.subheader]
    # the page explains the study's pick (winner, else the best screened): which one depends on
    # the CPU (INT8 is slower without VNNI) and its load, so only the form is fixed here
    assert any(t.startswith("Per-layer diff #0 → #") and t != "Per-layer diff #0 → #0" for t in titles), titles
    assert "Failure triage" in titles
    summaries = [m.value for m in list(at.success) + list(at.info)]
    # the diff's own summary, as gptuner_core words it for the stored profiles: which layers it
    # names as causes (or whether it says "within noise") is the machine's timing, not the page's
    pick = next(int(m[1]) for t in titles if (m := re.match(r"Per-layer diff #0 → #(\d+)", t)))
    expected = explain(cnn_study, pick).layer_diff.summary()
    assert "ms in layers" in expected and any(expected in s for s in summaries), (expected, summaries)
    frames = [df.value for df in [*at.dataframe, *at.table]]  # static tables since issue 39 item 7
    diff = next(f for f in frames if "layer (ONNX origin)" in f.columns)
    assert {"delta ms", "noise ms", "cause"} <= set(diff.columns)
    fail = next(f for f in frames if "exclude expression" in f.columns)
    assert fail["exclude expression"].tolist() == ["-quant:mode=[off|qdq] -quant:weight_type=[int8]"]


def test_triage_button_offers_the_expression_to_new_run(cnn_study, monkeypatch):
    from gptuner_core.dashboard import state

    at = _explain_page(cnn_study, monkeypatch)
    button = next(b for b in at.button if b.label == "Use this expression in New run")
    button.click().run()
    assert not at.exception, at.exception
    assert at.session_state[state.EXPRESSION] == "-quant:mode=[off|qdq] -quant:weight_type=[int8]"
