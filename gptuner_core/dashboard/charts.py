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
