"""The expression builder keeps what the user typed across runs that do not draw it.

Streamlit deletes a widget's state at the end of any run in which the widget is not drawn. New run
draws the builder only while the model has a knob database (and one builder per backend), so a
single run without it (a model being switched, the other backend's builder) re-initialised the
text with the sample's starter expression: a clean-clone browser run saw "-fp16:convert=[off|on]"
typed, accepted, and replaced by the starter two reruns later.
"""

from __future__ import annotations

import sys

from streamlit.testing.v1 import AppTest


def _app() -> None:
    from pathlib import Path

    import streamlit as st

    from gptuner_core.backends import get_backend
    from gptuner_core.dashboard.builder import expression_builder

    root = Path(__import__("gptuner_core").__file__).resolve().parents[1]
    db = get_backend("onnxruntime").describe(root / "assets" / "mlp_digits.onnx")
    if st.checkbox("draw", value=True, key="draw"):
        expression_builder(db, key="b", initial="-fp16:convert=off", label="Expression")


def test_typed_expression_survives_a_run_without_the_builder(monkeypatch) -> None:
    # AppTest.from_function runs its script as __main__ and leaves it there; a later spawned
    # child would re-import that script (NameError: __args) and die at start: restore it
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    at = AppTest.from_function(_app, default_timeout=60).run()
    assert not at.exception
    at.text_area(key="b_text").set_value("-fp16:convert=[off|on]").run()
    at.checkbox(key="draw").uncheck().run()  # a run that does not draw the builder
    at.checkbox(key="draw").check().run()
    assert not at.exception
    assert at.text_area(key="b_text").value == "-fp16:convert=[off|on]"


def test_the_browser_falls_back_on_the_text_the_server_holds(monkeypatch) -> None:
    """A browser shows a text area's ``default`` whenever it holds no value of its own for it,
    e.g. when the run that set the text was cut short by the next rerun and its message was
    coalesced away. The default must be the server's text: with "" there, a fresh-server browser
    run (2 of 24 here) showed an empty box, and the next commit sent "" and lost the expression."""
    monkeypatch.setitem(sys.modules, "__main__", sys.modules["__main__"])
    at = AppTest.from_function(_app, default_timeout=60).run()
    assert not at.exception
    assert at.text_area(key="b_text").proto.default == "-fp16:convert=off"  # the starter
    at.text_area(key="b_text").set_value("-fp16:convert=[off|on]").run()
    at.checkbox(key="draw").uncheck().run()
    at.checkbox(key="draw").check().run()
    assert not at.exception
    assert at.text_area(key="b_text").proto.default == "-fp16:convert=[off|on]"
