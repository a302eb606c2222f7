"""Compare two to four candidates: route differences, latency distributions, accuracy, layers."""

from __future__ import annotations

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import data
from gptuner_core.dashboard import state
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.compare import compare_studies
from gptuner_core.dashboard.explain import render_layer_diff


ws = widgets.page_setup("Compare", "⚖️")
st.title("Compare")
mode = st.segmented_control("Compare", ["Candidates of one study", "Studies"],
                            default="Candidates of one study", key="cmp_mode")
if mode == "Studies":
    compare_studies(ws)
    st.stop()
study, snap = widgets.require_snapshot(ws)
numbers = [r.number for r in snap.records]
if len(numbers) < 2:
    st.info(f"**{study.name}** needs at least two candidates to compare.")
    st.stop()

labels = {r.number: f"#{r.number} · {r.state.value}" for r in snap.records}
default = [n for n in (state.get(state.COMPARE) or []) if n in labels][:4]
if len(default) < 2:
    win = (snap.meta.get("winner") or {}).get("number")
    default = [0, win] if win not in (None, 0) and win in labels else numbers[:2]
picked = st.multiselect("Candidates (2–4)", numbers, default=default, max_selections=4,
                        format_func=labels.get, key=f"cmp_pick_{study.name}")
state.put(state.COMPARE, picked)
if len(picked) < 2:
    st.info("Pick at least two candidates.")
    st.stop()
recs = [r for r in (data.candidate(study, n) for n in picked) if r is not None]

st.subheader("Routes (differences highlighted)")
routes = {f"#{r.number}": r.effective_route or r.requested_route for r in recs}
diff = views.route_diff_frame(routes)
only = st.checkbox("Only knobs that differ", value=True, key="cmp_only")
shown = diff[diff["differs"]] if only else diff
if len(shown):
    st.dataframe(shown.style.apply(
        lambda row: ["background-color: #fff3cd" if row["differs"] else "" for _ in row], axis=1),
        hide_index=True, width="stretch")
else:
    st.caption("These routes set identical knob values.")

st.subheader("Latency")
summary = views.candidates_frame(recs)[["number", "state", "median_ms", "ci_low_ms", "ci_high_ms",
                                        "p95_ms", "cv", "n_samples", "speedup"]]
st.dataframe(summary, hide_index=True, width="stretch")
samples = {f"#{r.number}": r.samples_ms for r in recs if r.samples_ms}
if samples:
    st.plotly_chart(views.overlaid_samples_figure(samples), key="cmp_hist")
else:
    st.caption("None of these candidates has latency samples.")

st.subheader("Accuracy per output")
acc = views.accuracy_frame(recs)
if len(acc):
    st.dataframe(acc, hide_index=True, width="stretch")
else:
    st.caption("No accuracy recorded.")

st.subheader("Where the time goes: aligned layer diff")
st.caption(f"#{recs[1].number} against #{recs[0].number}: layers matched by their ONNX origin, "
           "sorted by contribution to the end-to-end difference; deltas within the profile's "
           "noise are marked as such, not as causes.")
render_layer_diff(study, recs[0], recs[1], key="cmp_layer_diff")
layer_diff = views.layer_diff_frame({f"#{r.number}": r.extra for r in recs})
if layer_diff is not None:
    st.subheader("Operator counts")
    st.dataframe(layer_diff, hide_index=True, width="stretch")
