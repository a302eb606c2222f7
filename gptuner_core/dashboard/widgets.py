"""Widgets shared by several pages: page setup, the study picker, backend status."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from gptuner_core.dashboard import state
from gptuner_core.dashboard.workspace import study_dirs
from gptuner_core.dashboard.workspace import workspace_dir


if TYPE_CHECKING:
    from gptuner_core.dashboard.data import Snapshot


def page_setup(title: str, icon: str = "⚙️") -> Path:
    """Page config, state defaults and the sidebar workspace line; returns the workspace."""
    st.set_page_config(page_title=f"gptuner · {title}", page_icon=icon, layout="wide")
    state.init()
    ws = workspace_dir()
    st.sidebar.caption(f"Workspace: `{ws}`")
    return ws


def _picked() -> None:
    state.put(state.STUDY, st.session_state["_study_picker"])
    state.put(state.CANDIDATE, None)
    state.put(state.COMPARE, [])


def study_picker(ws: Path, *, label: str = "Study") -> Path | None:
    """Sidebar selectbox over the workspace's studies; remembers the choice across pages and
    reloads (session state + ``?study=`` query parameter). ``None`` when there is no study."""
    names = [p.name for p in study_dirs(ws)]
    if not names:
        return None
    wanted = state.get(state.STUDY) or st.query_params.get("study")
    if wanted not in names:
        wanted = names[0]
    if st.session_state.get("_study_picker") != wanted:
        st.session_state["_study_picker"] = wanted
    st.sidebar.selectbox(label, names, key="_study_picker", on_change=_picked)
    st.query_params["study"] = wanted
    return ws / wanted


def load_snapshot(study: Path) -> Snapshot | None:
    """The study snapshot, or ``None`` after showing why it cannot be read."""
    from gptuner_core.dashboard import data
    from gptuner_core.errors import GptunerError

    try:
        return data.snapshot(study)
    except GptunerError as exc:
        st.error(f"Cannot read study '{study.name}': {exc}")
        return None


def require_snapshot(ws: Path) -> tuple[Path, Snapshot]:
    """The picked study and its snapshot; stops the page (after saying why) when there is none."""
    study = study_picker(ws)
    if study is None:
        no_study_message()
        st.stop()
    snap = load_snapshot(study)
    if snap is None:
        st.stop()
    return study, snap


def no_study_message() -> None:
    st.info(
        "No study in this workspace yet. Start one from **New run** (or with "
        "`gptuner tune MODEL --study $GPTUNER_WORKSPACE/NAME ...`)."
    )
    st.page_link("pages/2_New_run.py", label="New run", icon=":material/rocket_launch:")


def backend_status() -> None:
    """One line per backend with its availability, and which one is the default."""
    from gptuner_core.dashboard import data

    lines = []
    usable = set()
    for name, avail in data.backends():
        if avail.available:
            usable.add(name)
            version = f" {avail.version}" if avail.version else ""
            lines.append(f"- **{name}**: available{version}")
        else:
            lines.append(f"- **{name}**: unavailable ({avail.reason})")
    st.markdown("\n".join(lines))
    if "tensorrt" in usable:
        st.caption("TensorRT is available: it is the default backend.")
    else:
        st.caption(
            "TensorRT is unavailable here, so **ONNX Runtime (CPU) is the default backend**; "
            "every feature works with it."
        )
