"""Where every figure's legend goes: at the foot of the figure, below the x-axis title.

plotly's default legend sits right of the plot, over a colour bar; the earlier "``y=-0.2``" is a
fraction of the plot's height, so on a short figure it landed on the x-axis title and on a tall
one far below it (issue 39 item 7's screenshots). Here the legend is anchored to the bottom of
the whole figure (``yref="container"``) and the bottom margin grows by the rows the legend takes.
"""

from __future__ import annotations

from typing import Any


#: room below the plot for the tick labels and the x-axis title
AXIS_ROOM_PX = 50
#: one legend row (12 px text and its padding)
ROW_PX = 24
#: the width a legend row can fill (a chart in the dashboard's main column at 1400 px)
ROW_WIDTH_PX = 860
#: one legend entry: its symbol and gap, then about 7 px per character of its name
ENTRY_PX = 50
CHAR_PX = 7


def _shown_names(fig: Any) -> list[str]:
    names = []
    for trace in fig.data:
        if trace.showlegend is False or not trace.name:
            continue
        names.append(str(trace.name))
    return names


def legend_rows(fig: Any, *, width_px: int = ROW_WIDTH_PX) -> int:
    """How many rows the horizontal legend of ``fig`` takes (0 without a legend)."""
    rows, used = 0, width_px
    for name in _shown_names(fig):
        entry = ENTRY_PX + CHAR_PX * len(name)
        if used + entry > width_px:
            rows, used = rows + 1, 0
        used += entry
    return rows


def legend_below(fig: Any) -> Any:
    """Put the legend of ``fig`` at the foot of the figure, left-aligned, and make room for it
    (and for the x-axis title above it) in the bottom margin. Returns ``fig``."""
    rows = legend_rows(fig)
    bottom = AXIS_ROOM_PX + ROW_PX * rows + (8 if rows else 0)
    current = fig.layout.margin.b
    fig.update_layout(
        legend={"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom",
                "x": 0.0, "xanchor": "left", "bgcolor": "rgba(255,255,255,0)"},
        margin={"b": max(bottom, int(current) if current is not None else 0)},
    )
    return fig
