"""A study as one self-contained HTML report (``gptuner report``; the dashboard's download).

:func:`study_report` gathers what the report shows (verdict, figures, health, candidates,
repro commands) as a :class:`StudyReport`; :func:`render_html` writes it as one HTML file with
plotly.js embedded, so it opens without a server or the network.
"""

from __future__ import annotations

from gptuner_core.report.content import StudyReport
from gptuner_core.report.content import study_report
from gptuner_core.report.html import render_html
from gptuner_core.report.html import write_report


__all__ = ["StudyReport", "render_html", "study_report", "write_report"]
