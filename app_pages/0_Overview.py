"""Overview: the studies of the workspace with status, best speedup and a stale flag."""

from __future__ import annotations

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import data
from gptuner_core.dashboard import state
from gptuner_core.dashboard import tables
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.core import GptunerError
from gptuner_core.dashboard.workspace import pending_launches
from gptuner_core.dashboard.workspace import pid_alive
from gptuner_core.dashboard.workspace import study_dirs


ws = widgets.page_setup("Overview", "🧭")
st.title("gptuner — studies")


def _any_running() -> bool:
    for study in study_dirs(ws):
        try:
            snap = data.header(study)
        except GptunerError:
            continue
        if views.effective_status(snap.meta.get("status"), pid_alive(snap.meta.get("pid"))) == "running":
            return True
    return any(p.alive for p in pending_launches(ws))


@st.fragment(run_every=3.0 if _any_running() else None)
def overview() -> None:
    """The studies table (refreshed every 3 s while a study runs)."""
    summaries, unreadable = [], []
    for study in study_dirs(ws):
        try:
            snap = data.header(study)
        except GptunerError as exc:
            unreadable.append(f"{study.name}: {exc}")
            continue
        current = dict(data.current_environment(str(snap.config.get("backend", "onnxruntime"))))
        sha = data.model_sha256(str(snap.config.get("model", "")))
        if sha:
            current["model_sha256"] = sha
        n_finished = snap.n_finished
        summaries.append(
            views.study_summary(
                study.name,
                config=snap.config,
                meta=snap.meta,
                n_finished=n_finished,
                stale=views.stale_reasons(snap.fingerprint, current),
                pid_alive=pid_alive(snap.meta.get("pid")),
                best_ms=snap.best_ms,
            )
        )

    if summaries:
        table = views.studies_frame(summaries)
        c1, c2, c3 = st.columns(3)
        c1.metric("Studies", len(table))
        c2.metric("Running", int((table["status"] == "running").sum()))
        c3.metric("Stale", int((table["stale"] != "").sum()))
        grid = table[list(views.STUDY_GRID)]
        picked = st.dataframe(
            table, hide_index=True, width="stretch", key="overview_table",
            column_order=views.STUDY_GRID, column_config=tables.sized_columns(grid),
            on_select="rerun", selection_mode="single-row",
        )
        # what each study ran on and the long texts, wrapped: in the grid they were cut or off-screen
        tables.static_table(views.study_notes(table))
        rows = picked.selection.rows if picked is not None else []
        if rows:
            name = table.iloc[rows[0]]["study"]
            state.put(state.STUDY, name)
            st.query_params["study"] = name
            st.success(f"Selected **{name}** — open a page:")
            cols = st.columns(4)
            cols[0].page_link("app_pages/3_Live.py", label="Live", icon=":material/monitoring:")
            cols[1].page_link("app_pages/4_Results.py", label="Results", icon=":material/insights:")
            cols[2].page_link("app_pages/5_Route_trace.py", label="Route trace", icon=":material/route:")
            cols[3].page_link("app_pages/6_Compare.py", label="Compare", icon=":material/compare_arrows:")
        if (table["stale"] != "").any():
            st.warning(
                "⚠ Stale studies were recorded on a different model, software or machine than this "
                "one: their winners may not hold here. Re-run them (New run, or `gptuner tune … "
                "--continue --force`) to re-validate."
            )
    else:
        widgets.no_study_message()
    for line in unreadable:
        st.warning(f"Unreadable study folder — {line}")

    for launch in pending_launches(ws):
        if launch.alive:
            st.info(f"**{launch.name}**: the tuner is starting…")
        else:
            st.error(f"**{launch.name}** failed to start: {launch.cause}")
            with st.expander(f"{launch.name}: tuner log"):
                st.code(launch.log or "(empty)", language="text", wrap_lines=True)


overview()
with st.expander("Backends on this machine", expanded=not study_dirs(ws)):
    widgets.backend_status()
