"""Per-session state: every ``st.session_state`` key the pages share, in one place.

Keys not bound to widgets survive page switches (widget-bound keys are dropped by Streamlit
when their widget is not rendered), so cross-page choices are copied into these.
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
TRUSTED_UPLOADS = "gptuner.trusted_uploads"  # uploaded .py/.pt2 models the user confirmed

DEFAULTS: dict[str, Any] = {
    STUDY: None,
    CANDIDATE: None,
    COMPARE: [],
    EPSILON: {},
    EXPRESSION: "",
    LAST_LAUNCH: None,
    RESUME_ASK: None,
    LOG_Y: True,
    TRUSTED_UPLOADS: (),
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
