"""dashboard.tables: grid columns as wide as their content, static tables as text."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from gptuner_core.dashboard import tables


def test_column_is_as_wide_as_its_longest_value_or_header() -> None:
    verdict = "no winner: keeping the default (undecided after 8 rounds)"
    frame = pd.DataFrame({"study": ["a", "torch_h200"], "verdict": ["—", verdict],
                          "best ms": [0.16180339, None]})
    widths = tables.column_widths(frame)
    assert widths["verdict"] >= len(verdict) * 7 and widths["verdict"] == tables.text_px(verdict)
    assert widths["study"] == tables.text_px("torch_h200")
    assert widths["best ms"] == tables.text_px("best ms")  # the header is wider than "0.1618"
    assert tables.column_widths(pd.DataFrame({"x": ["y" * 500]}))["x"] == tables.MAX_PX
    assert tables.column_widths(pd.DataFrame({"x": [1]}))["x"] == tables.MIN_PX


def test_sized_columns_keep_a_given_config_and_set_every_width() -> None:
    frame = pd.DataFrame({"a": [1.5], "b": ["text"]})
    config = tables.sized_columns(frame, {"a": st.column_config.NumberColumn(format="%.3fx")})
    assert config["a"]["type_config"]["format"] == "%.3fx"
    assert set(config) == {"a", "b"} and all(isinstance(c["width"], int) for c in config.values())


def test_shown_is_text_with_a_dash_for_empty_cells() -> None:
    frame = tables.shown(pd.DataFrame({"x": [None, math.nan, 0.123456, 7, "long words"]}))
    assert frame["x"].tolist() == ["—", "—", "0.1235", "7", "long words"]
    assert list(tables.shown(pd.DataFrame({"failure_rate_at_default": [0.5]})).columns) == [
        "failure rate at default"]


def test_only_long_words_may_break_anywhere() -> None:
    """Seen in Chromium: breaking every word anywhere squeezed short columns ("searc|h")."""
    assert tables.long_word("c6323f05a540dd8f916f441df2b2f046417f3438c4698554f2a65dbd22e2199b")
    assert not tables.long_word("search space exhausted, onnxruntime")
