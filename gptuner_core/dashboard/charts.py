"""Plotly charts whose space is reserved before they draw.

Streamlit loads its plotly component lazily: until it has drawn, a chart's slot holds a short
placeholder, and the chart then pushes everything below it down (127 px for a 450 px chart in
headless Chromium, seconds after the run ended on a busy machine). A control below a chart moved
under the pointer: Compare's round-budget list, opened by a first click, was lost (issue 26
item 3). Every chart is drawn in a box of the figure's own height, so nothing moves.
"""

from __future__ import annotations

from typing import Any

import streamlit as st


#: plotly.js's height for a figure that sets none (what st.plotly_chart draws)
DEFAULT_HEIGHT = 450
#: the box's room beyond the figure (no scroll bar for a chart of exactly the figure's height)
SLACK = 8


def figure_height(fig: Any) -> int:
    """The height the chart will take: the figure's own, else plotly.js's default."""
    try:
        height = fig.layout.height
    except AttributeError:
        height = (fig.get("layout") or {}).get("height") if isinstance(fig, dict) else None
    return int(height) if isinstance(height, (int, float)) and height > 0 else DEFAULT_HEIGHT


def plotly(fig: Any, *, key: str, **kwargs: Any) -> Any:
    """``st.plotly_chart(fig, key=key, **kwargs)`` in a box of the figure's height; returns what
    ``st.plotly_chart`` returns (the selection event when ``on_select`` is set)."""
    with st.container(height=figure_height(fig) + SLACK, border=False, key=f"{key}_box"):
        return st.plotly_chart(fig, key=key, **kwargs)


def point_number(point: Any) -> int | None:
    """The candidate number a selected point carries (its ``customdata``'s first value), or
    ``None``. The browser sends a row of a figure's 2-D ``customdata`` array as a JSON object
    (``{"0": 6}``: plotly.js keeps the row as a typed array, which serialises so), a 1-D one
    as a plain value; a list is what a hand-made event holds."""
    if not isinstance(point, dict):
        return None
    data = point.get("customdata")
    if isinstance(data, dict):
        data = data.get("0", data.get(0))
    elif isinstance(data, (list, tuple)):
        data = data[0] if data else None
    try:
        return int(data) if data is not None else None
    except (TypeError, ValueError):
        return None


def selected_numbers(event: Any) -> list[int]:
    """The candidate numbers of the points a chart's selection event holds (click, box, lasso),
    sorted, each once; an event of any other shape selects nothing."""
    try:
        points = event["selection"]["points"] or []
    except (KeyError, TypeError):
        return []
    numbers = {point_number(p) for p in points} if isinstance(points, list) else set()
    return sorted(n for n in numbers if n is not None)
