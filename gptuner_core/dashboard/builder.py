"""The expression builder widget: knob search, pickers, file loading and the text, in sync.

The text (``<key>_text``) is the one source of truth. Every change goes through a callback that
runs before the page script: a text edit or a loaded file is parsed back into the pickers
(:func:`gptuner_core.views.builder.selection_from_text`); a picker change rewrites the text
(:func:`~gptuner_core.views.builder.compose_text`). While the text does not parse, the pickers are
disabled, so an edit in progress is never overwritten. The search narrows the knobs offered, and
knobs already picked stay listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from gptuner_core.dashboard import tables
from gptuner_core.errors import ExpressionError
from gptuner_core.views import builder as model


if TYPE_CHECKING:
    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase


def _keys(key: str) -> dict[str, str]:
    return {n: f"{key}_{n}" for n in ("text", "picked", "query", "ns", "file", "bracketed",
                                      "error", "kept")}


def _vals_key(key: str, name: str) -> str:
    return f"{key}_vals:{name}"


def _sync_pickers(key: str, db: KnobDatabase) -> None:
    """Text -> pickers (callback). A text that does not parse leaves the pickers alone."""
    k = _keys(key)
    text = st.session_state.get(k["text"], "")
    try:
        sel = model.selection_from_text(text, db)
    except ExpressionError:
        return  # shown by the page; the pickers keep their state
    st.session_state[k["picked"]] = list(sel.knobs)
    st.session_state[k["bracketed"]] = set(sel.bracketed)
    for name in sel.knobs:
        values = sel.values[name]
        st.session_state[_vals_key(key, name)] = (
            list(values) if db[name].values is not None else "|".join(values)
        )


def _picker_values(key: str, db: KnobDatabase, name: str) -> list[str]:
    raw = st.session_state.get(_vals_key(key, name))
    knob = db[name]
    if raw is None:
        return list(knob.values) if knob.values is not None else [knob.default]
    if isinstance(raw, str):
        return [v.strip() for v in raw.split("|") if v.strip()]
    return list(raw)


def _sync_text(key: str, db: KnobDatabase) -> None:
    """Pickers -> text (callback)."""
    k = _keys(key)
    picked = [n for n in st.session_state.get(k["picked"], []) if n in db]
    values = {n: _picker_values(key, db, n) for n in picked}
    bracketed = set(st.session_state.get(k["bracketed"], set())) & set(picked)
    st.session_state[k["text"]] = model.compose_text(picked, values, bracketed)


def _load_file(key: str, db: KnobDatabase) -> None:
    """Uploaded expression file -> text -> pickers (callback)."""
    from gptuner_core.expressions import expression_file_text
    from gptuner_core.expressions import tokenize

    k = _keys(key)
    up = st.session_state.get(k["file"])
    if up is None:
        return
    st.session_state[k["error"]] = None
    try:
        text = up.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        st.session_state[k["error"]] = (
            f"expression file '{up.name}': expected UTF-8 text (got binary data)")
        return
    from gptuner_core.views.builder import file_problem

    problem = file_problem(up.name, text)
    if problem:
        st.session_state[k["error"]] = problem
        return
    st.session_state[k["text"]] = " ".join(tokenize(expression_file_text(text)))
    _sync_pickers(key, db)


def expression_builder(db: KnobDatabase, *, key: str, initial: str = "",
                       label: str = "Expression (trtexec --tuneBuildRoute syntax, editable)",
                       table: bool = False) -> tuple[str, Expression | None]:
    """Render the builder; return the expression text and its parse (``None`` when blank or
    invalid, after showing why)."""
    from gptuner_core import views
    from gptuner_core.expressions import Expression

    k = _keys(key)
    if k["text"] not in st.session_state or k["bracketed"] not in st.session_state:
        # Streamlit drops a widget's state after any run that does not draw it (New run draws
        # this only while the model has a knob database, one builder per backend): the text
        # comes back from its copy under a plain key, which Streamlit never drops
        # (or, in a tab reloaded from disk, the text is back without the pickers' state)
        st.session_state[k["text"]] = st.session_state.get(
            k["text"], st.session_state.get(k["kept"], initial))
        _sync_pickers(key, db)
    knobs = views.knob_frame(db)
    c1, c2 = st.columns([2, 1])
    query = c1.text_input("Search knobs (name, namespace, help)", key=k["query"])
    spaces = c2.multiselect("Namespaces", db.namespaces(), key=k["ns"])
    shown = views.search_knobs(knobs, query, spaces)
    if table:
        # a static table (the help wraps; the grid cut it), in a box that scrolls past 420 px
        with st.container(height=420 if len(shown) > 8 else "content", border=False):
            tables.static_table(shown)
    picked = [n for n in st.session_state.get(k["picked"], []) if n in db]
    st.session_state[k["picked"]] = picked
    error = model.expression_problem(st.session_state[k["text"]], db)
    options = model.picker_options(list(shown["knob"]), picked)
    st.multiselect(
        f"Knobs to tune ({len(shown)} of {len(db)} shown by the search; picked knobs stay)",
        options, key=k["picked"], on_change=_sync_text, args=(key, db), disabled=bool(error),
        help="Fix the expression text first" if error else None,
    )
    for name in picked:
        knob = db[name]
        vk = _vals_key(key, name)
        if knob.values is not None:
            if vk not in st.session_state:
                st.session_state[vk] = list(knob.values)
            st.multiselect(f"{name} values (default {knob.default})", list(knob.values), key=vk,
                           on_change=_sync_text, args=(key, db), disabled=bool(error))
        else:
            if vk not in st.session_state:
                st.session_state[vk] = knob.default
            st.text_input(f"{name} values, separated by | ({knob.unbounded_type})",
                          value=st.session_state[vk], key=vk, on_change=_sync_text,
                          args=(key, db), disabled=bool(error))
    st.file_uploader("…or load an expression file (--tuneBuildRouteFile; '#' comments allowed)",
                     type=["txt"], key=k["file"], on_change=_load_file, args=(key, db))
    # the default a browser falls back on is the text this run holds (a browser that never got
    # the run that set it, cut short by the next rerun, shows and then sends that, never "")
    text = st.text_area(label, value=st.session_state[k["text"]], key=k["text"], height=80,
                        on_change=_sync_pickers, args=(key, db))
    st.session_state[k["kept"]] = text
    if st.session_state.get(k["error"]):
        st.error(st.session_state[k["error"]])  # the loaded file could not be read
    if error:
        st.error(f"Invalid expression: {error}")
        return text, None
    if not text.strip():
        return text, None
    return text, Expression.parse(text.strip(), db)
