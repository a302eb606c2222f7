"""Tables whose text is never cut (issue 39 item 7's screenshots).

Two kinds:

* :func:`static_table`: a plain HTML table (``st.table``) whose cells wrap, each row as tall
  as its own longest cell. For reading: a route trace's record, a comparison, a builder's help.
* :func:`sized_columns`: a data grid's (``st.dataframe``) column widths from their content, for
  tables that need the grid (row selection, sorting). The grid draws on a canvas and cannot wrap
  a cell except by giving every row one height, the longest cell's; a column as wide as its
  longest value shows it whole, on one line, in rows of the usual height.

Widths are estimates from character counts (the grid's 14 px sans-serif averages under 7 px a
character; a margin keeps wide letters whole).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import streamlit as st


#: pixels a character takes in the grid (an upper estimate), and a cell's padding
CHAR_PX = 7.5
PAD_PX = 28
MIN_PX = 56
#: no column wider than this (its text then shows whole in a static table instead)
MAX_PX = 520


def text(value: Any) -> str:
    """A cell as the grid shows it: ``None``/NaN as empty, floats to 4 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def text_px(value: Any) -> int:
    """The width a cell needs to show ``value`` whole on one line."""
    return int(math.ceil(len(text(value)) * CHAR_PX)) + PAD_PX


def column_widths(frame: Any, *, max_px: int = MAX_PX) -> dict[str, int]:
    """Each column's width: its header's or longest value's, whichever is wider, at most
    ``max_px``."""
    widths = {}
    for col in frame.columns:
        need = max([text_px(col), *(text_px(v) for v in frame[col].tolist())])
        widths[str(col)] = max(MIN_PX, min(max_px, need))
    return widths


def sized_columns(frame: Any, config: Mapping[str, Any] | None = None, *,
                  max_px: int = MAX_PX) -> dict[str, Any]:
    """``column_config`` for ``st.dataframe(frame, ...)``: the given ``config`` with every
    column's width from :func:`column_widths` (a config's own width is replaced)."""
    config = dict(config or {})
    out: dict[str, Any] = {}
    for col, px in column_widths(frame, max_px=max_px).items():
        given = config.get(col)
        out[col] = {**(dict(given) if isinstance(given, Mapping) else {}), "width": px}
    return out


def shown(frame: Any, *, spaced_headers: bool = True) -> Any:
    """``frame`` as text (:func:`text`; empty cells as "—"), ready for a static table; with
    ``spaced_headers``, its field names' underscores as spaces: "failure_rate_at_default" was one
    word, which either pushed Explain's effects table past the page or broke as "fa|il|ed".
    Headers that are names (a study per column) keep theirs."""
    if not len(frame.columns):
        return frame
    out = frame.map(lambda v: text(v) or "—")
    if spaced_headers:
        out.columns = [str(c).replace("_", " ") for c in out.columns]
    return out


#: the background of a highlighted row (a knob that differs)
HIGHLIGHT = "background-color: #fff3cd"
#: a static table of more rows than this is a scrolling grid instead (sized columns): an HTML
#: table of thousands of layers is slow to send and to draw
MAX_STATIC_ROWS = 200


#: a word longer than this (a sha256, a path, a route's knob) may break anywhere; shorter words
#: stay whole (letting every word break anywhere squeezed short columns to "searc|h")
LONG_WORD = 24


def long_word(value: str) -> bool:
    """Whether ``value`` holds a word longer than ``LONG_WORD`` characters."""
    return any(len(word) > LONG_WORD for word in str(value).split())


def static_table(frame: Any, *, highlight: str | None = None, spaced_headers: bool = True) -> None:
    """``frame`` as a static table whose cells wrap (no index; every value as text): between
    words, and inside a word only where it is longer than ``LONG_WORD``. With ``highlight``, the
    rows whose boolean column of that name is true get a background and the column shows "✓"
    (a grid's checkbox could not be read as text). ``spaced_headers``: see :func:`shown`."""
    table = shown(frame.drop(columns=[highlight]) if highlight else frame,
                  spaced_headers=spaced_headers)
    marks = [False] * len(table)
    if highlight:
        marks = frame[highlight].fillna(False).astype(bool).tolist()
        table[highlight.replace("_", " ") if spaced_headers else highlight] = ["✓" if m else "" for m in marks]
    table = table.reset_index(drop=True)
    styled = table.style.map(lambda v: BREAK_ANYWHERE if long_word(v) else "")
    if any(marks):
        styled = styled.apply(lambda row: [HIGHLIGHT if marks[row.name] else "" for _ in row], axis=1)
    st.table(styled, hide_index=True)


#: the style of a cell holding a long word
BREAK_ANYWHERE = "overflow-wrap: anywhere"


def table(frame: Any, *, config: Mapping[str, Any] | None = None, **kwargs: Any) -> Any:
    """A static wrapped table (:func:`static_table`) up to ``MAX_STATIC_ROWS`` rows; beyond, a
    grid whose columns are as wide as their content (:func:`sized_columns`)."""
    if len(frame) <= MAX_STATIC_ROWS:
        static_table(frame)
        return None
    return st.dataframe(frame, hide_index=True, width="stretch",
                        column_config=sized_columns(frame, config), **kwargs)


#: static tables wrap inside their cells, between words (a cell with a long word breaks it
#: anywhere: its own style, ``BREAK_ANYWHERE``); a cell's text sits in a markdown paragraph,
#: which takes the cell's rules; narrower side padding lets Explain's 15 columns fit 1400 px
WRAP_TABLES = """
[data-testid="stTable"] td, [data-testid="stTable"] th {
  white-space: normal; overflow-wrap: break-word; word-break: normal;
  padding-left: 0.4rem !important; padding-right: 0.4rem !important;
}
[data-testid="stTable"] td *, [data-testid="stTable"] th * {
  white-space: inherit !important; overflow-wrap: inherit !important; word-break: inherit !important;
  text-overflow: clip !important; overflow: visible !important;
}
[data-testid="stTable"] table { table-layout: auto; width: 100%; }
"""
