"""Compare two or more studies (e.g. one model on two backends or two TensorRT versions)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from gptuner_core.dashboard import charts
from gptuner_core.dashboard import data
from gptuner_core.dashboard import tables
from gptuner_core.dashboard.workspace import study_dirs
from gptuner_core.errors import GptunerError


def compare_studies(ws: Path) -> None:
    """Pick studies; show one column each, the EDF of their latencies and their best-so-far curves."""
    from gptuner_core.views.explore import best_so_far_figure
    from gptuner_core.views.explore import edf_figure
    from gptuner_core.views.study_comparison import comparison_table
    from gptuner_core.views.study_comparison import study_line

    names = [p.name for p in study_dirs(ws)]
    if len(names) < 2:
        st.info("Comparing studies needs at least two studies in the workspace.")
        return
    picked = st.multiselect("Studies (2 or more)", names, default=names[:2], key="cmp_studies")
    if len(picked) < 2:
        st.info("Pick at least two studies.")
        return
    lines, frames = [], {}
    for name in picked:
        try:
            snap = data.snapshot(ws / name)
        except GptunerError as exc:
            st.error(f"Cannot read study '{name}': {exc}")
            continue
        cfg = snap.config
        ranked = data.ranked(ws / name, cfg.get("epsilon"), metric=str(cfg.get("metric", "l2")),
                             task_metric=cfg.get("task_metric"), max_drop=cfg.get("max_task_drop"))
        lines.append(study_line(name, cfg, snap.fingerprint, snap.meta, ranked))
        frames[name] = ranked
    if len(frames) < 2:
        return
    # one column per study, wrapped: a row per study cut the verdict (issue 39 item 7)
    tables.static_table(comparison_table(lines), spaced_headers=False)  # headers: study names
    charts.plotly(edf_figure(frames), key="cmp_edf")
    charts.plotly(best_so_far_figure(frames), key="cmp_best")
