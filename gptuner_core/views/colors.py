"""One colour scale for latency, shared by every figure that colours by it.

Viridis, darker = faster: the lowest median latency is Viridis's dark purple, the highest its
yellow, and the colour bar says "median ms". The Contour view had it reversed (darker = slower)
beside the parallel coordinates' darker = faster (issue 39 item 7's screenshots).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


SCALE = "Viridis"
TITLE = "median ms"


def colorbar(title: str = TITLE) -> dict[str, Any]:
    """The colour bar of a latency colour: its title."""
    return {"title": {"text": title}}


def latency_marker(values: Sequence[float], *, low: float | None = None,
                   high: float | None = None) -> dict[str, Any]:
    """A marker dict colouring points by their median latency (darker = faster), with its bar."""
    marker: dict[str, Any] = {"color": list(values), "colorscale": SCALE, "reversescale": False,
                              "showscale": True, "colorbar": colorbar()}
    if low is not None and high is not None:
        marker.update(cmin=low, cmax=high)
    return marker


def latency_heatmap() -> dict[str, Any]:
    """The ``go.Heatmap`` arguments for a latency grid (darker = faster)."""
    return {"colorscale": SCALE, "reversescale": False, "colorbar": colorbar()}


def speedup_heatmap() -> dict[str, Any]:
    """The ``go.Heatmap`` arguments for a speed-up grid: darker = faster too (a higher speed-up is
    the darker end), its bar titled as a screening speed-up."""
    return {"colorscale": SCALE, "reversescale": True,
            "colorbar": colorbar("best screening speed-up (x)")}


def latency_colors(n: int) -> list[str]:
    """``n`` colours from fastest (dark) to slowest (bright), for latency bands."""
    from plotly.colors import sample_colorscale

    return list(sample_colorscale(SCALE, [(b + 0.5) / n for b in range(n)])) if n > 0 else []
