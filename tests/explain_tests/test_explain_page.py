"""AppTest of the Explain page on the real study: diff, effects, triage and its one-click expression."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest


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
    # the diff's summary names its causes, or says the difference is within noise (which pick,
    # and so which, depends on the CPU)
    assert any(("/c2/conv/Conv" in s or "QLinearConv" in s or "within noise" in s) and "ms in layers" in s
               for s in summaries), summaries
    frames = [df.value for df in at.dataframe]
    diff = next(f for f in frames if "layer (ONNX origin)" in f.columns)
    assert {"delta_ms", "noise_ms", "cause"} <= set(diff.columns)
    fail = next(f for f in frames if "exclude_expression" in f.columns)
    assert fail["exclude_expression"].tolist() == ["-quant:mode=[off|qdq] -quant:weight_type=[int8]"]


def test_triage_button_offers_the_expression_to_new_run(cnn_study, monkeypatch):
    from gptuner_core.dashboard import state

    at = _explain_page(cnn_study, monkeypatch)
    button = next(b for b in at.button if b.label == "Use this expression in New run")
    button.click().run()
    assert not at.exception, at.exception
    assert at.session_state[state.EXPRESSION] == "-quant:mode=[off|qdq] -quant:weight_type=[int8]"
