"""Route trace: one candidate in full — routes, state, times, artifact, accuracy, raw samples,
per-layer information, its log, and commands that reproduce it."""

from __future__ import annotations

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import charts
from gptuner_core.dashboard import data
from gptuner_core.dashboard import launch
from gptuner_core.dashboard import state
from gptuner_core.dashboard import tables
from gptuner_core.dashboard import trust
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.core import GptunerError


ws = widgets.page_setup("Route trace", "🔎")
st.title("Route trace")
study, snap = widgets.require_candidates(ws)

winner_number = (snap.meta.get("winner") or {}).get("number")
wanted = state.get(state.CANDIDATE)
if wanted is None:
    wanted = winner_number
number = widgets.candidate_picker(snap.records, label="Candidate", key=f"rt_pick_{study.name}",
                                  wanted=wanted, keep=(winner_number, snap.records[0].number))
if number is None:
    st.stop()
state.put(state.CANDIDATE, number)
rec = data.candidate(study, number)
if rec is None:
    st.error(f"Candidate #{number} is no longer in the store.")
    st.stop()

(st.error if rec.state.is_failure() or rec.state.value == "ACCURACY_FAILED" else st.success)(
    views.trace.state_line(rec))
left, right = st.columns([1, 1])
with left:
    st.subheader("Record")
    tables.static_table(views.trace_fields(rec))  # routes, paths, hashes wrap: the grid cut them
with right:
    st.subheader("Requested vs effective route")
    diff = views.route_diff_frame({"requested": rec.requested_route, "effective": rec.effective_route or ""})
    if len(diff):
        widgets.differences_table(diff)
    else:
        st.caption("Default route: every knob at its default.")
    st.subheader("Accuracy per output and slice")
    acc = views.accuracy_frame([rec])
    if len(acc):
        tables.table(acc)
    else:
        st.caption("No accuracy recorded.")

st.subheader("Latency")
if rec.samples_ms:
    charts.plotly(views.samples_histogram(rec.samples_ms), key="rt_hist")
else:
    st.caption("No latency samples (the candidate was not measured).")
if rec.telemetry:
    with st.expander("Telemetry"):
        st.json(rec.telemetry)

layers = views.layers_frame(rec.extra)
st.subheader("Per-layer information")
if layers is not None:
    tables.table(layers)
else:
    st.caption("This backend recorded no per-layer information for this candidate.")
other = {k: v for k, v in rec.extra.items() if k not in views.trace.LAYER_KEYS}
if other:
    with st.expander("Backend details"):
        st.json(other)

st.subheader("Log")
log, note = trust.study_file(study, rec.log_path, what="candidate log",
                             fallback=study / "candidates" / f"{rec.number:05d}" / "log.txt")
if note:
    (st.caption if log is not None or not rec.log_path else st.error)(note)  # none recorded: not an error
log_text = launch.tail(log, 12000) if log is not None else ""
if log_text:
    st.code(log_text, language="text", wrap_lines=True)
else:
    original_log = False  # a DUPLICATE's pointer leads to a log, or says there is none
    original = data.candidate(study, rec.duplicate_of) if rec.duplicate_of is not None else None
    if original is not None:
        found, _ = trust.study_file(study, original.log_path, what="candidate log",
                                    fallback=study / "candidates" / f"{original.number:05d}" / "log.txt")
        original_log = found is not None and bool(launch.tail(found, 200).strip())
    st.caption(views.trace.no_log_line(rec, original_has_log=original_log))

st.subheader("Artifact")
artifact, note = trust.study_file(study, rec.artifact_path, what="artifact")
if artifact is not None and artifact.is_file():
    if note:
        st.caption(note)
    st.download_button(f"Download {artifact.name} ({artifact.stat().st_size:,} bytes)",
                       data=lambda: artifact.read_bytes(), file_name=artifact.name,
                       key=f"rt_artifact_{rec.number}")
elif artifact is not None and artifact.is_dir():
    st.caption(f"The artifact is a folder ({artifact.name}); download it from the study folder.")
else:
    st.caption(note or "No artifact kept for this candidate (failed, or --discard-artifacts).")

st.subheader("Notes")
widgets.notes_box(study, candidate=rec.number)

st.subheader("Reproduce")
backend_repro = {}
try:
    name = str(snap.config.get("backend", "onnxruntime"))
    if ":" in name:  # a module:Class backend is code the study names: never imported here
        msg = f"backend '{name}' is outside the registry (not imported when a study is opened)"
        raise GptunerError(msg)
    backend_repro = data.backend_repro(name, str(snap.config.get("model", "")),
                                       rec.effective_route or rec.requested_route or "")
except (GptunerError, ImportError) as exc:
    st.caption(f"Backend-specific commands unavailable here: {exc}")
for kind, cmd in views.repro_commands(snap.config, rec, study_dir=str(study),
                                      backend_repro=backend_repro).items():
    st.caption(kind)
    st.code(cmd, language="bash", wrap_lines=True)  # whole on screen; copied as one line
st.caption("The `gptuner tune` command measures the default route and this one in a study of its own "
           "(`…-repro-N`): it prints the route's speed-up against the default. A repro study is "
           "never the study a page opens by default.")
