"""Results: accuracy × latency with Pareto front and adjustable ε, speedups, history, knob
effects, and a filterable table with CSV download."""

from __future__ import annotations

import math

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import data
from gptuner_core.dashboard import state
from gptuner_core.dashboard import widgets


ws = widgets.page_setup("Results", "📊")
st.title("Results")
study, snap = widgets.require_snapshot(ws)
frame = data.frame(study)
if frame.empty:
    st.info(f"**{study.name}** has no candidates yet.")
    st.stop()

cfg = snap.config
metric = str(cfg.get("metric", "l2"))
chosen = dict(state.get(state.EPSILON) or {})
has_loss = bool(frame["max_loss"].notna().any())
c1, c2, c3 = st.columns([1, 1, 2])
gate_on = c1.checkbox("Accuracy gate", value=chosen.get(study.name, cfg.get("epsilon")) is not None
                      and has_loss, disabled=not has_loss, key="res_gate")
eps_default = chosen.get(study.name) or cfg.get("epsilon") or 1e-3
epsilon = c2.number_input(f"ε ({metric})", min_value=0.0, value=float(eps_default), format="%g",
                          disabled=not gate_on, key=f"res_eps_{study.name}")
if gate_on:
    chosen[study.name] = epsilon
    state.put(state.EPSILON, chosen)
max_drop = cfg.get("max_task_drop")
ranked = views.apply_epsilon(frame, snap.records, epsilon if gate_on else None, metric=metric,
                             task_metric=cfg.get("task_metric"), max_drop=max_drop)
best = views.winner(ranked)
counts = ranked["category"].value_counts()
c3.caption(
    f"configured ε: {cfg.get('epsilon')} · now: {epsilon if gate_on else 'off'} — the eligible set "
    "and the winner are re-ranked from the stored losses, nothing is re-run."
)
m = st.columns(5)
m[0].metric("Candidates", len(ranked))
m[1].metric(views.ELIGIBLE, int(counts.get(views.ELIGIBLE, 0)))
m[2].metric(views.ACCURACY_FAILED, int(counts.get(views.ACCURACY_FAILED, 0)))
m[3].metric(views.FAILED, int(counts.get(views.FAILED, 0)))
if best is not None:
    ci = (best["speedup_ci_low"], best["speedup_ci_high"])
    ci_text = f"CI {ci[0]:.3f}–{ci[1]:.3f}" if not any(map(math.isnan, ci)) else "no CI"
    m[4].metric(f"Screening best: #{int(best['number'])}", f"{best['speedup']:.3f}x", ci_text,
                delta_color="off")
    st.code(best["route"] or "(default route)", language="bash")
    win = snap.meta.get("winner") or {}
    if win.get("message"):
        # the tuner's verdict after interleaved re-validation in fresh processes
        (st.success if win.get("significant") else st.info)(f"Winner: {win['message']}")
    if gate_on and epsilon != cfg.get("epsilon") and win.get("number") not in (None, int(best["number"])):
        st.caption(f"At this ε the fastest eligible route is #{int(best['number'])}; re-validate it "
                   "before relying on it (the stored winner was decided at the configured ε).")
else:
    m[4].metric("Best", "—")
    st.warning("No eligible candidate at this ε.")

tabs = st.tabs(["Accuracy vs latency", "Speedup", "History", "Knob effect", "Table",
                "Measurement health"])
with tabs[0]:
    fig = views.accuracy_latency_figure(ranked, epsilon=epsilon if gate_on else None, metric=metric)
    event = st.plotly_chart(fig, key="res_scatter", on_select="rerun", selection_mode="points")
    points = (event.selection.points if event is not None else []) or []
    picked = [int(p["customdata"][0]) for p in points if p.get("customdata")]
    if picked:
        state.put(state.CANDIDATE, picked[0])
        state.put(state.COMPARE, picked[:4])
        st.write(f"Selected: {', '.join(f'#{n}' for n in picked[:4])}")
        c1, c2 = st.columns(2)
        c1.page_link("pages/5_Route_trace.py", label="Route trace", icon=":material/route:")
        c2.page_link("pages/6_Compare.py", label="Compare", icon=":material/compare_arrows:")
with tabs[1]:
    st.plotly_chart(views.speedup_figure(ranked), key="res_speedup")
with tabs[2]:
    st.plotly_chart(views.history_figure(views.best_so_far(ranked)), key="res_history")
with tabs[3]:
    knobs = views.knob_columns(ranked)
    if knobs:
        knob = st.selectbox("Knob", knobs, key="res_knob")
        st.plotly_chart(views.knob_effect_figure(ranked, knob), key="res_knob_fig")
    else:
        st.info("No knob takes more than one value among these candidates.")
with tabs[4]:
    c1, c2 = st.columns([1, 1])
    cats = c1.multiselect("Show", list(views.CATEGORIES), default=list(views.CATEGORIES), key="res_cats")
    text = c2.text_input("Route or error contains", key="res_text")
    knob_filter = {}
    knobs = views.knob_columns(ranked)
    if knobs:
        with st.expander("Filter by knob value"):
            for k in knobs:
                values = sorted(ranked[f"knob:{k}"].dropna().unique().tolist())
                knob_filter[k] = st.multiselect(k, values, key=f"res_kf_{k}")
    shown = views.filter_frame(ranked, categories=cats, text=text, knob_values=knob_filter)
    cols = ["number", "rank", "category", "state", "speedup", "median_ms", "ci_low_ms", "ci_high_ms",
            "max_loss", "gate_reason", "cv", "n_samples", "build_time_s", "route", "error"]
    table = st.dataframe(
        shown, column_order=cols + [c for c in shown.columns if c.startswith("knob:")],
        hide_index=True, width="stretch", key="res_table", on_select="rerun",
        selection_mode="multi-row",
        column_config={
            "speedup": st.column_config.NumberColumn(format="%.3fx"),
            "median_ms": st.column_config.NumberColumn("median (ms)", format="%.4g"),
            "max_loss": st.column_config.NumberColumn(f"max loss ({metric})", format="%.3g"),
        },
    )
    rows = table.selection.rows if table is not None else []
    if rows:
        numbers = [int(shown.iloc[i]["number"]) for i in rows][:4]
        state.put(state.CANDIDATE, numbers[0])
        state.put(state.COMPARE, numbers)
        st.write(f"Selected: {', '.join(f'#{n}' for n in numbers)}")
        c1, c2 = st.columns(2)
        c1.page_link("pages/5_Route_trace.py", label="Route trace", icon=":material/route:")
        c2.page_link("pages/6_Compare.py", label="Compare", icon=":material/compare_arrows:")
    st.download_button("Download CSV", lambda: views.to_csv(shown), file_name=f"{study.name}.csv",
                       mime="text/csv", key="res_csv")
with tabs[5]:
    health = snap.meta.get("health") or {}
    h = st.columns(4)
    pct = "{:.1%}".format
    h[0].metric("median CV", pct(health["median_cv"]) if health.get("median_cv") is not None else "—")
    dr = health.get("drift_range")
    h[1].metric("default-route drift", f"{dr[0]:+.1%} … {dr[1]:+.1%}" if dr else "—")
    h[2].metric("busy CPU share", pct(health["busy_share"]) if health.get("busy_share") is not None else "—")
    h[3].metric("throttled share",
                pct(health["throttled_share"]) if health.get("throttled_share") is not None else "—")
    for warning in health.get("warnings", []):
        st.warning(warning)
    baselines = data.events(study, "baseline")
    drift = views.drift_frame(snap.records, baselines)
    if len(drift) > 1:
        st.plotly_chart(views.drift_figure(drift), key="res_drift")
        if st.checkbox("Normalize speed-ups to the default route measured nearest in time",
                       key="res_normalize"):
            st.dataframe(views.normalized_frame(snap.records, baselines), hide_index=True,
                         width="stretch", column_config={
                             "speedup": st.column_config.NumberColumn(format="%.3fx"),
                             "normalized_speedup": st.column_config.NumberColumn(
                                 "normalized", format="%.3fx"),
                         })
    else:
        st.caption("The default route was measured once: no drift sentinel in this study "
                   "(--drift-every N re-measures it every N candidates).")
