"""Widgets shared by several pages: page setup, the study picker, backend status."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import streamlit as st

from gptuner_core.dashboard import state
from gptuner_core.dashboard import tables
from gptuner_core.dashboard.workspace import study_dirs
from gptuner_core.dashboard.workspace import workspace_dir


if TYPE_CHECKING:
    from gptuner_core.dashboard.data import Snapshot


def page_setup(title: str, icon: str = "⚙️") -> Path:
    """Page config, state defaults and the sidebar workspace line; returns the workspace."""
    st.set_page_config(page_title=f"gptuner · {title}", page_icon=icon, layout="wide")
    state.init()
    state.keep_widgets()
    keep_study_link()
    st.html(WRAP_METRICS)
    ws = workspace_dir()
    st.sidebar.caption(f"Workspace: `{ws}`")
    return ws


#: a multiselect's picked values wrap onto more lines: in one line that scrolls sideways, Results'
#: "Show" filter hid its fourth and fifth categories at 1400 px (issue 39 item 7's screenshots)
WRAP_TAGS = """
[data-testid="stMultiSelectTagsContainer"] {
  flex-wrap: wrap !important; overflow-x: visible !important; row-gap: 4px;
}
"""


#: metrics wrap their value and delta instead of cutting them with "…" (Live's current route
#: and phase, Results' screening delta lost exactly the words saying it is not the verdict)
WRAP_METRICS = """<style>
[data-testid="stMetricValue"], [data-testid="stMetricValue"] *,
[data-testid="stMetricDelta"], [data-testid="stMetricDelta"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
  overflow-wrap: anywhere;
}
[data-testid="stMetricValue"] { font-size: 1.6rem; line-height: 1.25; }
""" + tables.WRAP_TABLES + WRAP_TAGS + "</style>"


def keep_study_link() -> None:
    """The study this tab works on, in every page's URL (``?study=``). A page switch drops the
    query parameters; a link that names a study (a bookmark, a colleague's link) makes it the
    tab's study until the user picks another."""
    linked = st.query_params.get("study")
    if linked is not None:
        state.put(state.STUDY, str(linked))
    elif state.get(state.STUDY):
        st.query_params["study"] = state.get(state.STUDY)


def _picked() -> None:
    name = st.session_state["_study_picker"]
    state.put(state.STUDY, name)
    state.put(state.CANDIDATE, None)
    state.put(state.COMPARE, [])
    if name is not None:
        st.query_params["study"] = name


def unknown_study_line(name: str) -> str:
    shown = name if len(name) <= 80 else f"{name[:77]}..."
    return (f"No study named {shown!r} in this workspace: a study is a folder holding a "
            "study.sqlite; pick one in the sidebar.")


def study_picker(ws: Path, *, label: str = "Study") -> Path | None:
    """Sidebar selectbox over the workspace's studies; remembers the choice across pages and
    reloads (session state + ``?study=`` query parameter). ``None`` when there is no study, or
    when the tab's study (a link's) is not one of them: then one line says so, and nothing of
    another study is shown until the user picks one."""
    names = [p.name for p in study_dirs(ws)]
    if not names:
        return None
    wanted = state.get(state.STUDY)
    if wanted is not None and wanted not in names:
        launched = (state.get(state.LAST_LAUNCH) or {}).get("study") == wanted
        if not launched:  # a study just started has no store yet: Live waits for it
            st.error(unknown_study_line(str(wanted)))
        st.session_state["_study_picker"] = None
        st.sidebar.selectbox(label, names, index=None, key="_study_picker", on_change=_picked,
                             placeholder="pick a study")
        return None
    from gptuner_core.views.trace import is_repro

    wanted = wanted or next((n for n in names if not is_repro(n)), names[0])  # never a repro
    if st.session_state.get("_study_picker") != wanted:
        st.session_state["_study_picker"] = wanted
    st.sidebar.selectbox(label, names, key="_study_picker", on_change=_picked)
    state.put(state.STUDY, wanted)
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
        if not study_dirs(ws):
            no_study_message()
        st.stop()
    snap = load_snapshot(study)
    if snap is None:
        st.stop()
    return study, snap


def require_candidates(ws: Path) -> tuple[Path, Snapshot]:
    """:func:`require_snapshot`, the study's verdict first, and the page stops (after saying so)
    while the study has no candidate."""
    study, snap = require_snapshot(ws)
    verdict_banner(snap.meta)
    if not snap.records:
        st.info(f"**{study.name}** has no candidates yet.")
        st.stop()
    return study, snap


def differences_table(frame: Any) -> None:
    """A table of knobs with a boolean ``differs`` column, the rows that differ highlighted; a
    static table, so long knob names and values wrap (the grid cut them)."""
    tables.static_table(frame.reset_index(drop=True), highlight="differs")


def no_study_message() -> None:
    st.info(
        "No study in this workspace yet. Start one from **New run** (or with "
        "`gptuner tune MODEL --study $GPTUNER_WORKSPACE/NAME ...`)."
    )
    st.page_link("app_pages/2_New_run.py", label="New run", icon=":material/rocket_launch:")


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


def notes_box(study: Path, *, candidate: int | None = None) -> None:
    """Edit the study's (or a candidate's) note, saved to ``STUDY/notes.json`` on Save."""
    from gptuner_core.dashboard import notes

    try:
        current = notes.read_notes(study)
    except notes.NotesError as exc:
        st.error(str(exc))
        return
    text = current.study if candidate is None else current.candidates.get(candidate, "")
    what = "this study" if candidate is None else f"candidate #{candidate}"
    key = f"note_{study.name}_{'study' if candidate is None else candidate}"
    new = st.text_area(f"Note on {what} (saved in the study folder, notes.json)", value=text,
                       key=key, height=90)
    if st.button("Save note", key=f"{key}_save", disabled=new == text):
        try:
            notes.write_note(study, new, candidate=candidate)
        except (notes.NotesError, OSError) as exc:
            st.error(f"note not saved: {exc}")
        else:
            st.success("Note saved.")


def confirm_code(references: list[str], *, key: str, action: str = "resume this study") -> bool:
    """Show the code a study would run and ask for explicit confirmation.

    Returns True only on the run where the user pressed the confirmation button; with no
    references it returns True at once (nothing foreign runs).
    """
    if not references:
        return True
    st.warning(
        f"To {action}, gptuner will run code this study names, outside gptuner's bundled "
        "assets. Studies are shared as folders: run it only if you trust where it came from.\n"
        + "\n".join(f"- `{r}`" for r in references)
    )
    return st.button(f"I trust this code: {action}", key=key, type="primary")


def report_html(study: Path) -> str:
    """The study's self-contained HTML report, as ``gptuner report STUDY -o FILE`` writes it."""
    from gptuner_core.report import render_html
    from gptuner_core.report import study_report

    return render_html(study_report(study))


def report_download(study: Path, *, key: str = "report_download") -> None:
    """A button that downloads the study's HTML report; built only when pressed (deferred)."""
    st.download_button(
        "Download report (HTML)", data=lambda: report_html(study),
        file_name=f"{study.name}-report.html", mime="text/html", key=key, on_click="ignore",
        icon=":material/download:",
        help=f"one self-contained file, the same as `gptuner report {study.name} -o report.html`")


def candidate_picker(records, *, label: str, key: str, wanted: int | None,
                     keep: tuple[int | None, ...] = (), container=None) -> int | None:
    """A selectbox over the study's candidates that stays small in a big study: every candidate
    up to ``views.picker.MAX_OPTIONS``, else the kept ones (default, winner, ``wanted``) and the
    matches of a search box. Its options are short (``#5 · screening 1.23x · 3 knobs``); the
    picked candidate's full route is shown below it, wrapped (a long route was cut by the box).
    Returns the picked number (``None`` for no candidate)."""
    from gptuner_core.views.picker import MAX_OPTIONS
    from gptuner_core.views.picker import candidate_choices

    box = container or st
    query = ""
    if len(records) > MAX_OPTIONS:
        query = box.text_input(f"Find ({label.lower()})", key=f"{key}_find",
                               placeholder="number, state or knob value, e.g. #4711 or SIGSEGV")
    choices = candidate_choices(records, query=query, keep=(wanted, *keep), route=False)
    if not choices.numbers:
        box.warning(f"No candidate matches '{query}'.")
        return None
    numbers = list(choices.numbers)
    index = numbers.index(wanted) if wanted in choices.labels else 0
    number = box.selectbox(label, numbers, index=index, format_func=choices.labels.get, key=key)
    picked = next((r for r in records if r.number == number), None)
    if picked is not None:
        box.code(picked.requested_route or "(default route: every knob at its default)",
                 language=None, wrap_lines=True)
    if choices.truncated:
        box.caption(choices.caption())
    return number


def verdict_banner(meta: dict, *, container=None) -> None:
    """The study's verdict, first on every page: its headline and plain sentences from the one
    stored ``Winner``, the method in a details expander; nothing before a verdict exists."""
    win = meta.get("winner")
    if not win:
        return
    from gptuner_core.records import Winner

    w = Winner.from_json(dict(win))
    box = container or st
    (box.success if w.significant else box.info)(f"**Verdict: {w.headline()}** — {w.sentence()}")
    if w.details():
        with box.expander("How the verdict was measured"):
            st.caption(w.details())
