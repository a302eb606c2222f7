"""Compare two to four candidates: route differences, latency distributions, "is B faster than
A?" (interleaved re-validation in the background, stored with the study), accuracy, layers."""

from __future__ import annotations

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import charts
from gptuner_core.dashboard import data
from gptuner_core.dashboard import state
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.compare import compare_studies
from gptuner_core.dashboard.core import GptunerError
from gptuner_core.dashboard.core import code_references
from gptuner_core.dashboard.core import pairwise
from gptuner_core.dashboard.core import pairwise_jobs
from gptuner_core.dashboard.core import percent
from gptuner_core.dashboard.core import stored_config
from gptuner_core.dashboard.explain import render_layer_diff
from gptuner_core.views import compare as cmp_views
from gptuner_core.views.picker import MAX_OPTIONS
from gptuner_core.views.picker import candidate_choices


ws = widgets.page_setup("Compare", "⚖️")
st.title("Compare")
mode = st.segmented_control("Compare", ["Candidates of one study", "Studies"],
                            default="Candidates of one study", key="cmp_mode")
if mode == "Studies":
    compare_studies(ws)
    st.stop()
study, snap = widgets.require_snapshot(ws)
widgets.verdict_banner(snap.meta)  # the verdict first
if len(snap.records) < 2:
    st.info(f"**{study.name}** needs at least two candidates to compare.")
    st.stop()

known = {r.number for r in snap.records}
first_two = [r.number for r in snap.records[:2]]
win = (snap.meta.get("winner") or {}).get("number")
default = [n for n in (state.get(state.COMPARE) or []) if n in known][:4]
if len(default) < 2:
    default = [0, win] if win not in (None, 0) and win in known and 0 in known else first_two
query = ""
if len(snap.records) > MAX_OPTIONS:
    query = st.text_input("Find candidates", key=f"cmp_find_{study.name}",
                          placeholder="number, state or knob value, e.g. #4711 or SIGSEGV")
current = [n for n in st.session_state.get(f"cmp_pick_{study.name}", default) if n in known]
choices = candidate_choices(snap.records, query=query, keep=(*current, *default, win), route=False)
labels = choices.labels
picked = st.multiselect("Candidates (2–4)", list(choices.numbers), default=default,
                        max_selections=4, format_func=labels.get, key=f"cmp_pick_{study.name}")
if choices.truncated:
    st.caption(choices.caption())
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
    widgets.differences_table(shown)
else:
    st.caption("These routes set identical knob values.")

st.subheader("Latency")


def _latency_views() -> tuple:
    summary = views.candidates_frame(recs)[["number", "state", "median_ms", "ci_low_ms", "ci_high_ms",
                                            "p95_ms", "cv", "n_samples", "speedup"]]
    samples = {f"#{r.number}": r.samples_ms for r in recs if r.samples_ms}
    # "screening speedup": never mistaken for the verdict
    return (summary.rename(columns={"speedup": "screening speedup"}),
            views.overlaid_samples_figure(samples) if samples else None)


# built once per store revision and pick (a plotly figure costs 0.1-0.3 s of every rerun)
summary, hist = data.derived("cmp_latency", study, tuple(r.number for r in recs), _latency_views)
st.dataframe(summary, hide_index=True, width="stretch")
if hist is not None:
    charts.plotly(hist, key="cmp_hist")
else:
    st.caption("None of these candidates has latency samples.")

st.subheader("Is B faster than A? (interleaved re-validation)")
by_number = {r.number: r for r in recs}
c1, c2, c3 = st.columns(3)
ref = c1.selectbox("A (reference)", list(by_number), index=0, format_func=labels.get,
                   key=f"cmp_a_{study.name}")
others = [n for n in by_number if n != ref]
cand = c2.selectbox("B (compared with A)", others, index=0, format_func=labels.get,
                    key=f"cmp_b_{study.name}")
budget = int(snap.config.get("revalidate_rounds") or 4)
choices = sorted({*cmp_views.ROUND_CHOICES, max(budget, 2)})
rounds = c3.selectbox("Round budget", choices, index=choices.index(max(budget, 2)),
                      key="cmp_rounds")
st.caption(cmp_views.screening_line(by_number[ref], by_number[cand]))


def _status() -> cmp_views.PairwiseStatus:
    try:
        stored = pairwise.latest_comparison(study, ref, cand)
    except GptunerError:
        stored = None
    return cmp_views.pairwise_status(pairwise_jobs.latest_job(study, ref, cand), stored)


first = _status()


@st.fragment(run_every=1.0 if first.running else None)
def pairwise_panel() -> None:
    now = _status()
    if now.running != first.running:
        st.rerun(scope="app")
    if now.running:
        st.progress(now.fraction, text=now.text)
    elif now.state == "failed":
        st.error(f"**The last comparison failed:** {now.cause}")
    if now.result is not None:
        c = now.result
        show = {"winner": st.success, "failed": st.warning}.get(c.verdict, st.info)
        show(f"**{c.headline()}** — {c.sentence()}")
        relation = cmp_views.relation_line(snap.meta.get("winner"), c)
        if relation:
            st.warning(relation)
        m = st.columns(4)
        m[0].metric(f"Speed-up of #{c.candidate} vs #{c.reference}",
                    "—" if c.speedup is None else f"{c.speedup:.3f}x")
        m[1].metric(f"{percent(c.confidence)} CI",
                    f"[{c.ci[0]:.3f}, {c.ci[1]:.3f}]" if c.ci else "—")
        m[2].metric("Rounds", f"{c.rounds}/{c.max_rounds}")
        m[3].metric("Verdict", c.verdict.replace("_", " "))
        st.caption(f"Method: {c.method}")
    elif now.state == "none":
        st.caption(cmp_views.no_comparison_line(snap.meta.get("winner"), ref, cand))


pairwise_panel()
busy = cmp_views.busy_warning(pairwise_jobs.device_holders(study))
if busy and not first.running:
    st.warning(busy)
if st.button(f"Re-validate #{cand} vs #{ref}", key="cmp_reval", disabled=first.running,
             help=pairwise_jobs.command(study, ref, cand, rounds)):
    st.session_state["cmp_reval_ask"] = (study.name, ref, cand)
if st.session_state.get("cmp_reval_ask") == (study.name, ref, cand):
    # the comparison builds and runs the study's routes: code the study names runs only when confirmed
    if widgets.confirm_code(code_references(stored_config(study) or {}, study=study), key="cmp_reval_confirm",
                            action=f"re-validate #{cand} vs #{ref}"):
        st.session_state["cmp_reval_ask"] = None
        try:
            pairwise_jobs.launch_pairwise(study, ref, cand, max_rounds=rounds, trusted=True)
        except GptunerError as exc:
            st.error(f"Could not start the comparison: {exc}")
        else:
            st.rerun()
st.caption(f"Same as `{pairwise_jobs.command(study.name, ref, cand, rounds)}` (runs in the background; "
           "leaving the page does not stop it).")

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
