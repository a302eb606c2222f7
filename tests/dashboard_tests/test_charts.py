"""Charts keep their place while Streamlit loads its plotly component (issue 26 item 3)."""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go

from gptuner_core.dashboard.charts import DEFAULT_HEIGHT
from gptuner_core.dashboard.charts import figure_height


ROOT = Path(__file__).resolve().parents[2]


def test_the_box_is_the_figure_height() -> None:
    """The reserved box is the figure's own height, else plotly.js's default."""
    assert figure_height(go.Figure()) == DEFAULT_HEIGHT
    assert figure_height(go.Figure(layout={"height": 720})) == 720
    assert figure_height({"layout": {"height": 300}}) == 300


def test_every_chart_goes_through_the_box() -> None:
    """No page draws a plotly chart outside ``charts.plotly`` (a bare one moves what is below)."""
    bare = [str(p.relative_to(ROOT)) for p in [*ROOT.glob("app_pages/*.py"), ROOT / "app.py",
                                               *ROOT.glob("gptuner_core/dashboard/*.py")]
            if p.name != "charts.py" and "st.plotly_chart(" in p.read_text()]
    assert not bare
