"""Live: progress, ETA, phase (re-validation included), charts of candidates as they land and the
best so far, failures, the log; stop and resume (with a confirmation for foreign code)."""

from __future__ import annotations

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import charts
from gptuner_core.dashboard import data
from gptuner_core.dashboard import launch
from gptuner_core.dashboard import state
from gptuner_core.dashboard import tables
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.core import GptunerError
from gptuner_core.dashboard.core import is_running
from gptuner_core.dashboard.trust import code_references
from gptuner_core.dashboard.workspace import pid_alive
from gptuner_core.dashboard.workspace import study_dirs
from gptuner_core.views.explore import landing_figure


def resume(study, config) -> None:
    """Continue the study with its own stored settings (``gptuner tune --study S --continue``)."""
    pid = launch.resume(study)
    state.put(state.LAST_LAUNCH, {"study": study.name, "pid": pid,
                                  "command": launch.command(study, resume=True)})


ws = widgets.page_setup("Live", "📡")
st.title("Live")

pending = state.get(state.LAST_LAUNCH)
study = widgets.study_picker(ws)
if pending and (study is None or study.name != pending["study"]):
    target = ws / pending["study"]
    if not (target / "study.sqlite").is_file():
        # launched, but the tuner has not created its store yet: wait for it, or say it failed
        @st.fragment(run_every=1.0)
        def _waiting() -> None:
            if (target / "study.sqlite").is_file():
                st.rerun(scope="app")
            alive = pid_alive(pending.get("pid"))
            log = launch.tail(target / launch.LOG_FILE, 4000)
            if alive is False:
                cause = next((line for line in reversed(log.splitlines()) if line.strip()),
                             "(the tuner wrote nothing)")
                st.error(f"**{pending['study']}** failed to start: {cause}")
            else:
                st.info(f"Starting **{pending['study']}** (pid {pending.get('pid')})…")
            st.code(pending["command"], language="bash", wrap_lines=True)
            if log:
                st.code(log, language="text", wrap_lines=True)

        _waiting()
        st.stop()
if study is None:
    if not study_dirs(ws):
        widgets.no_study_message()
    st.stop()

snap = widgets.load_snapshot(study)
if snap is None:
    st.stop()
launcher_alive = is_running(study)  # tuner.pid written by the launcher (covers a fresh resume)
alive = pid_alive(snap.meta.get("pid")) or launcher_alive
status = views.effective_status(snap.meta.get("status"), alive)
if status not in ("running", "waiting") and launcher_alive:
    status = "starting"
running = status in ("running", "starting", "waiting")  # waiting: refreshes, and Stop acts at once


@st.fragment(run_every=2.0 if running else None)
def live_panel() -> None:
    try:
        s = data.snapshot(study)
    except GptunerError as exc:
        st.error(str(exc))
        return
    launcher = is_running(study)
    now_status = views.effective_status(s.meta.get("status"), pid_alive(s.meta.get("pid")) or launcher)
    if now_status not in ("running", "waiting") and launcher:
        now_status = "starting"
    if now_status != status:
        st.rerun(scope="app")
    shown = now_status  # "stopping" from the click on: the tuner reads the request between steps
    if now_status in ("running", "starting", "waiting") and launch.stop_requested(study):
        shown = "stopping"
    (st.error if now_status == "failed" else st.markdown)(
        f"**{study.name}** — status: **{shown}**"
        # a run starting (a Resume) has no message of its own yet: the last run's is not shown
        + (f" · {s.meta['status_message']}" if s.meta.get("status_message")
           and shown not in ("starting", "stopping") else ""))
    widgets.verdict_banner(s.meta)  # the verdict first, once there is one
    reval_dir = study / "revalidation"
    reval = views.revalidation_progress(
        [p.name for p in reval_dir.iterdir()] if reval_dir.is_dir() else [],
        top_k=int(s.config.get("revalidate_top_k", 3) or 0),
        rounds=int(s.config.get("revalidate_rounds", 5) or 0))
    prog = views.live_progress(s.meta.get("progress"), n_recorded=views.landed(s.records),
                               status=now_status, revalidation=reval)
    st.progress(prog.fraction, text=prog.text)
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("ETA", prog.eta)
    c2.metric("Current candidate", prog.current)
    c3.metric("Phase", prog.phase)
    ranked = data.ranked(study, s.config.get("epsilon"), metric=str(s.config.get("metric", "l2")),
                         task_metric=s.config.get("task_metric"),
                         max_drop=s.config.get("max_task_drop"))
    best = views.winner(ranked)
    c4.metric("Screening fastest so far", "—" if best is None else f"{best['speedup']:.3f}x",
              None if best is None else f"#{int(best['number'])} · {best['median_ms']:.4g} ms",
              delta_color="off")
    if ranked["median_ms"].notna().any():
        charts.plotly(landing_figure(ranked), key="live_chart")
    elif len(ranked):  # never an empty chart on made-up axes while the first route measures
        st.caption("No latency measured yet: the chart starts with the first measured route.")
    fails = views.recent_failures(s.records)
    if len(fails):
        st.caption("Recent failures")
        tables.table(fails)  # routes and errors wrap: the grid cut them
    with st.expander("Tuner log", expanded=now_status == "failed"):
        st.code(launch.tail(study / launch.LOG_FILE, 6000) or "(empty)", language="text", wrap_lines=True)


live_panel()

if not running and status in views.UNFINISHED:
    seen = data.revision(study)

    @st.fragment(run_every=3.0)
    def follow_resume() -> None:
        """A stopped study resumed without this page (a terminal's ``--continue``, another tab, or
        a Resume whose rerun the browser never got, seen on a busy machine): its tuner runs or
        its store changes, and the page follows."""
        if is_running(study) or data.revision(study) != seen:
            st.rerun(scope="app")

    follow_resume()

c1, c2 = st.columns(2)
if running:
    if launch.stop_requested(study):
        c1.info(launch.STOPPING)
    elif c1.button("Stop", key="live_stop", type="secondary"):
        try:
            launch.request_stop(study)
        except GptunerError as exc:  # it ended between the page's draw and the click
            c1.info(str(exc))
        else:
            st.rerun()  # "stopping" at once, in this rerun
elif status in views.UNFINISHED:
    if c1.button("Resume", key="live_resume", type="primary"):
        state.put(state.RESUME_ASK, study.name)
    if state.get(state.RESUME_ASK) == study.name:
        refs = code_references(snap.config, study=study)
        if widgets.confirm_code(refs, key="live_resume_confirm"):
            state.put(state.RESUME_ASK, None)
            try:
                resume(study, snap.config)
            except GptunerError as exc:
                st.error(str(exc))
            else:
                st.rerun()
else:
    c1.page_link("app_pages/4_Results.py", label="See the results", icon=":material/insights:")
