"""Per-session state: every ``st.session_state`` key the pages share, in one place.

Keys not bound to widgets survive page switches. Widget-bound keys are dropped by Streamlit after
any run that does not draw their widget (another page, a section hidden for a run, a run cut
short by an error); :func:`keep_widgets` (called by every page's setup) is the one mechanism that
keeps them: each run it copies every keyed input's value into :data:`KEPT` and puts back the ones
Streamlit dropped, so whatever was typed or picked is there when its widget is drawn again.
Buttons and file uploaders are not inputs Streamlit lets a script set, so they are left out.
"""

from __future__ import annotations

from typing import Any

import streamlit as st


STUDY = "gptuner.study"  # name of the selected study folder in the workspace
CANDIDATE = "gptuner.candidate"  # candidate number shown on the route trace page
COMPARE = "gptuner.compare"  # candidate numbers picked for the compare page
EPSILON = "gptuner.epsilon"  # {study name: ε chosen on the results page}
EXPRESSION = "gptuner.expression"  # expression built in the knob explorer, offered to New run
LAST_LAUNCH = "gptuner.last_launch"  # {"study", "pid", "command"} of the last Start
RESUME_ASK = "gptuner.resume_ask"  # study name whose Resume waits for the code confirmation
LOG_Y = "gptuner.log_y"  # accuracy axis in log scale (results)
SELECTED = "gptuner.selected"  # {study name: candidate numbers selected in a Results view}
SEEN = "gptuner.selection_seen"  # {chart key: the selection that chart last reported}
TRUSTED_UPLOADS = "gptuner.trusted_uploads"  # uploaded .py/.pt2 models the user confirmed
AUTO_NAME = "gptuner.auto_name"  # the study name New run last derived from the model
PENDING_STUDY = "gptuner.pending_study"  # {"name", "dir"}: the folder New run's Start creates
KEPT = "gptuner.kept"  # {widget key: last value} of every keyed input (see keep_widgets)
SAVED = "gptuner.kept_saved"  # the KEPT text last written to the tab's file
TAB_PARAM = "tab"  # query parameter naming the browser tab's saved inputs (survives reloads)
#: the widget value kinds a script may set (buttons, uploaders, editors and chat are left out)
_SETTABLE = frozenset({"bool_value", "double_value", "double_array_value", "int_value",
                       "int_array_value", "string_value", "string_array_value"})

DEFAULTS: dict[str, Any] = {
    STUDY: None,
    CANDIDATE: None,
    COMPARE: [],
    EPSILON: {},
    EXPRESSION: "",
    LAST_LAUNCH: None,
    RESUME_ASK: None,
    LOG_Y: True,
    SELECTED: {},
    SEEN: {},
    TRUSTED_UPLOADS: (),
    KEPT: {},
    SAVED: "",
    AUTO_NAME: None,
    PENDING_STUDY: None,
}


def init() -> None:
    """Fill missing keys with their defaults (the ``get(..., default)`` idiom, once per run)."""
    for key, default in DEFAULTS.items():
        if key not in st.session_state:
            st.session_state[key] = default.copy() if hasattr(default, "copy") else default


def get(key: str) -> Any:
    return st.session_state.get(key, DEFAULTS.get(key))


def put(key: str, value: Any) -> None:
    st.session_state[key] = value


def _settable(session: Any, key: str) -> bool:
    """Whether ``key`` belongs to an input widget whose value a script may set."""
    try:
        inner = session._state  # noqa: SLF001 - the widget registry (Streamlit ≥ 1.67)
        meta = inner.get_widget_metadata(inner.get_widget_id_from_key(key))
    except (AttributeError, KeyError):
        return False
    return meta is not None and meta.value_type in _SETTABLE


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, bool, int, float))


def keep_widgets() -> None:
    """Keep every keyed input across page switches, hidden sections and failed runs.

    Values of inputs drawn in the previous run are copied into :data:`KEPT`, then every kept
    value is set again through ``st.session_state`` (the documented way to keep a widget's value
    across pages): a widget drawn with the key takes it, on the server and in the browser.
    """
    from streamlit.runtime.state import get_session_state

    session = get_session_state()
    kept = st.session_state.get(KEPT)
    if not kept:  # a new session: a reload of the same tab brings its inputs back from disk
        kept = st.session_state[KEPT] = _load_kept()
    for key, value in st.session_state.to_dict().items():
        # plain values only: a chart's or table's selection (a dict) is read-only
        if (not key.startswith("gptuner.") and _plain(value) and _settable(session, key)):
            kept[key] = value
    _save_kept(kept)
    for key, value in kept.items():
        # set every kept input this run, drawn or not: Streamlit sends a widget the value set
        # through st.session_state in the run that draws it; a value put back in an earlier
        # run would be used by the server while the browser showed the widget's default
        st.session_state[key] = value


def _tab_file() -> Any:
    """``WORKSPACE/_sessions/<tab>.json`` for this browser tab (the ``?tab=`` token, made once
    per session and put back into the URL each run so that a reload keeps it)."""
    import re
    import secrets

    from gptuner_core.dashboard.workspace import workspace_dir

    token = str(st.query_params.get(TAB_PARAM) or "")
    if not re.fullmatch(r"[0-9a-f]{16}", token):
        token = st.session_state.get("gptuner.tab") or secrets.token_hex(8)
    st.session_state["gptuner.tab"] = token
    st.query_params[TAB_PARAM] = token
    return workspace_dir() / "_sessions" / f"{token}.json"


def _load_kept() -> dict[str, Any]:
    import json

    try:
        data = json.loads(_tab_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_kept(kept: dict[str, Any]) -> None:
    """Write the tab's inputs when they changed (a small JSON file; plain values only)."""
    import json

    text = json.dumps(kept, sort_keys=True)
    path = _tab_file()
    if text == st.session_state.get(SAVED) and path.is_file():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        return  # a read-only workspace: inputs still survive page switches, not reloads
    st.session_state[SAVED] = text
