"""Collapsible form sections that cost nothing while closed.

A Streamlit expander sends everything inside it to the browser even when closed: New run's
strategy options, backend options and advanced settings were about half of the page's 110
elements, drawn on every switch to it and never seen. :func:`section` is an expander whose
content runs only while it is open; while it is closed, the section's code runs against
:class:`Closed`, which draws nothing and answers every input with the value it holds (the one
:func:`gptuner_core.dashboard.state.keep_widgets` puts back each run) or its default. So the
form collects the same fields, and reports the same problems, open or closed.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING
from typing import Any

import streamlit as st


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Sequence


class Closed:
    """Stands in for ``st`` in a closed section: inputs return their held value, nothing draws."""

    def __enter__(self) -> Closed:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def columns(self, spec: int | Sequence[float], **_: Any) -> list[Closed]:
        return [self] * (spec if isinstance(spec, int) else len(spec))

    def text_input(self, label: str, value: Any = "", *, key: str, **_: Any) -> str:
        held = st.session_state.get(key)
        return str(held) if held is not None else ("" if value is None else str(value))

    def checkbox(self, label: str, value: bool = False, *, key: str, **_: Any) -> bool:
        held = st.session_state.get(key)
        return bool(value if held is None else held)

    def selectbox(self, label: str, options: Sequence[Any], index: int | None = 0, *, key: str,
                  **_: Any) -> Any:
        held = st.session_state.get(key)
        options = list(options)
        if held in options:
            return held
        return options[index] if options and index is not None else None

    def multiselect(self, label: str, options: Sequence[Any], default: Any = None, *, key: str,
                    **_: Any) -> list[Any]:
        held = st.session_state.get(key, default) or []
        return [v for v in held if v in list(options)]

    def _nothing(self, *_: Any, **__: Any) -> None:
        return None

    error = warning = caption = markdown = info = write = _nothing


CLOSED = Closed()


@contextmanager
def section(label: str, *, key: str) -> Iterator[Any]:
    """``with section("Advanced", key="nr_adv_open") as ui:`` — draw the content on ``ui``: the
    page while the expander is open (it reruns the page when opened or closed), :data:`CLOSED`
    otherwise. The open state is a keyed input, kept across page switches like the rest."""
    box = st.expander(label, key=key, on_change="rerun")
    with box:
        yield st if box.open else CLOSED
