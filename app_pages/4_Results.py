"""Results: accuracy × latency with Pareto front and adjustable ε, speedups, history, knob
effects, parallel coordinates, timeline, EDF, table with CSV, measurement health and notes.
Refreshes itself (a fragment) while the study runs."""

from __future__ import annotations

import math

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import data
from gptuner_core.dashboard import state
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.core import recommended
from gptuner_core.dashboard.inputs import parse_number
from gptuner_core.dashboard.results import gate_caption
from gptuner_core.dashboard.results import render_tabs
from gptuner_core.dashboard.results import revalidation_hint
from gptuner_core.dashboard.workspace import pid_alive


ws = widgets.page_setup("Results", "📊")
st.title("Results")
study, snap = widgets.require_snapshot(ws)
running = views.effective_status(snap.meta.get("status"), pid_alive(snap.meta.get("pid"))) == "running"
widgets.report_download(study)


@st.fragment(run_every=3.0 if running else None)
def results() -> None:
    s = widgets.load_snapshot(study)
    if s is None:
        return
    frame = data.frame(study)
    if frame.empty:
        st.info(f"**{study.name}** has no candidates yet.")
        return
    if running:
        st.caption(f"⟳ {study.name} is running: this page refreshes every 3 s.")
    cfg = s.config
    metric = str(cfg.get("metric", "l2"))
    chosen = dict(state.get(state.EPSILON) or {})
    has_loss = bool(frame["max_loss"].notna().any())
    c1, c2, c3 = st.columns([1, 1, 2])
    gate_on = c1.checkbox("Accuracy gate", value=chosen.get(study.name, cfg.get("epsilon")) is not None
                          and has_loss, disabled=not has_loss, key="res_gate")
    eps_default = chosen.get(study.name) or cfg.get("epsilon") or 1e-3
    text = c2.text_input(f"ε ({metric})", value=f"{float(eps_default):g}", disabled=not gate_on,
                         key=f"res_eps_{study.name}")
    epsilon = None
    if gate_on:
        epsilon, problem = parse_number(text, "ε", minimum=0, exclusive_min=True)
        if problem:
            epsilon = cfg.get("epsilon")
            c2.error(f"{problem}; ranking at the configured ε = {epsilon}")
        else:
            chosen[study.name] = epsilon
            state.put(state.EPSILON, chosen)
    ranked = data.ranked(study, epsilon, metric=metric, task_metric=cfg.get("task_metric"),
                         max_drop=cfg.get("max_task_drop"))
    best = views.winner(ranked)
    counts = ranked["category"].value_counts()
    c3.caption(gate_caption(cfg.get("epsilon"), epsilon if gate_on else None, has_loss=has_loss))
    win = s.meta.get("winner") or {}
    widgets.verdict_banner(s.meta)  # the verdict first; screening figures after it, labelled
    m = st.columns(5)
    m[0].metric("Candidates", len(ranked))
    m[1].metric(views.ELIGIBLE, int(counts.get(views.ELIGIBLE, 0)))
    m[2].metric(views.ACCURACY_FAILED, int(counts.get(views.ACCURACY_FAILED, 0)))
    m[3].metric(views.FAILED, int(counts.get(views.FAILED, 0)))
    if best is not None:
        ci = (best["speedup_ci_low"], best["speedup_ci_high"])
        ci_text = f"spread {ci[0]:.3f}–{ci[1]:.3f}" if not any(map(math.isnan, ci)) else "no spread"
        m[4].metric(f"Screening fastest: #{int(best['number'])}", f"{best['speedup']:.3f}x",
                    f"{ci_text} · one process, not the verdict", delta_color="off")
        st.code(best["route"] or "(default route)", language="bash", wrap_lines=True)
        if gate_on and epsilon != cfg.get("epsilon") and win.get("number") not in (None, int(best["number"])):
            st.caption(revalidation_hint(win, int(best["number"])))
    else:
        m[4].metric("Screening fastest", "—")
        st.warning("No eligible candidate at this ε.")
    render_tabs(study, s, ranked, epsilon=epsilon if gate_on else None, metric=metric,
                winner=recommended(win))


results()
