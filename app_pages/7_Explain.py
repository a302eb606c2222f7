"""Explain: why a candidate (default: the winner) differs from the default route — the aligned
per-layer diff, knob effects with uncertainty, importance, interactions and failure triage."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from gptuner_core.dashboard import data
from gptuner_core.dashboard import explain as ex
from gptuner_core.dashboard import state
from gptuner_core.dashboard import tables
from gptuner_core.dashboard import widgets


ws = widgets.page_setup("Explain", "🧭")
st.title("Explain")
study, snap = widgets.require_candidates(ws)

known = {r.number for r in snap.records}
first = snap.records[0].number
win = (snap.meta.get("winner") or {}).get("number")
wanted = state.get(state.CANDIDATE)
if wanted not in known:
    eligible = min((r for r in snap.records if r.eligible and r.number != first),
                   key=lambda r: r.latency.median_ms, default=None)  # type: ignore[union-attr]
    wanted = win if win in known and win != first else (eligible.number if eligible else first)
c1, c2 = st.columns(2)
number = widgets.candidate_picker(snap.records, label="Candidate", key=f"ex_pick_{study.name}",
                                  wanted=wanted, keep=(win, first), container=c1)
base_number = widgets.candidate_picker(snap.records, label="Against", key=f"ex_base_{study.name}",
                                       wanted=first, keep=(win,), container=c2)
if number is None or base_number is None:
    st.stop()
state.put(state.CANDIDATE, number)

expl = ex.explanation(study, number)
if expl is None:
    st.stop()
rec, base = data.candidate(study, number), data.candidate(study, base_number)
if rec is None or base is None:
    st.info("That candidate is no longer in the store.")
    st.stop()

st.subheader("Knobs changed")
if expl.changed and base_number == expl.baseline:
    tables.static_table(pd.DataFrame([{"knob": k, "default": d, "candidate": v}
                                      for k, d, v in expl.changed]))
elif base_number == expl.baseline:
    st.caption("This candidate sets every knob as the default route does.")

st.subheader(f"Per-layer diff #{base.number} → #{rec.number}")
if base.number == rec.number:
    st.caption("Pick two different candidates.")
else:
    ex.render_layer_diff(study, base, rec, key="ex_diff")

st.subheader("Knob effects (all candidates; failures counted as failures)")
ex.render_effects(study, expl, key="ex_eff")

st.subheader("Failure triage")
ex.render_triage(expl, key="ex_tri")

with st.expander(f"Per-layer profile of #{rec.number}"):
    ex.render_profile(study, rec, key="ex_prof")
