"""Knob explorer: browse a knob database, build a tunable expression, diff two databases."""

from __future__ import annotations

import streamlit as st

from gptuner_core import views
from gptuner_core.dashboard import data
from gptuner_core.dashboard import state
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.builder import expression_builder
from gptuner_core.dashboard.core import GptunerError
from gptuner_core.dashboard.core import KnobDatabase
from gptuner_core.dashboard.core import diff_knob_databases
from gptuner_core.dashboard.core import dry_run_lines
from gptuner_core.dashboard.forms import parse_number
from gptuner_core.dashboard.forms import strategy_counts_cached
from gptuner_core.dashboard.workspace import bundled_samples


ws = widgets.page_setup("Knob explorer", "🎛️")
st.title("Knob explorer")


def _db_from_upload(upload) -> KnobDatabase | None:
    try:
        return KnobDatabase.from_string(upload.getvalue().decode("utf-8", "replace"), source=f"'{upload.name}'")
    except GptunerError as exc:
        st.error(str(exc))
        return None


source = st.radio(
    "Knob database from", ["backend + model", "all_build_routes JSON file"], horizontal=True, key="kx_source"
)
db: KnobDatabase | None = None
if source == "backend + model":
    names = [n for n, a in data.backends() if a.available]
    c1, c2 = st.columns(2)
    backend = c1.selectbox("Backend", names, key="kx_backend")
    samples = {s.name: s for s in bundled_samples() if backend is None or s.fits(backend)}
    model = c2.selectbox("Model", list(samples) or ["(no bundled sample)"], key="kx_model")
    if not names:
        st.warning("No backend can describe models here:")
        widgets.backend_status()
    elif model in samples:
        try:
            db = data.knob_database(backend, samples[model].model, samples[model].file.stat().st_mtime_ns)
        except GptunerError as exc:
            st.error(f"Cannot describe {model} with {backend}: {exc}")
else:
    up = st.file_uploader("all_build_routes JSON (e.g. trtexec --helpBuildRoute output)", type=["json"], key="kx_db_file")
    if up is not None:
        db = _db_from_upload(up)

if db is None:
    st.info("Choose a backend and model, or upload a knob database, to explore its knobs.")
else:
    st.caption(f"tuner_version **{db.tuner_version}** · {len(db)} knobs · sha256 `{db.sha256[:16]}`")
    st.subheader("Build a tunable expression")
    text, expr = expression_builder(db, key="kx_expr", initial=state.get(state.EXPRESSION) or "",
                                    table=True)
    if expr is not None:
        st.code(str(expr), language="bash", wrap_lines=True)
        budget, problem = parse_number(st.text_input("Budget (max candidates, blank = none)", "",
                                                     key="kx_budget"),
                                       "budget", kind=int, minimum=1, blank=None)
        if problem:
            st.error(problem)
        counts = strategy_counts_cached(str(expr), db, int(budget) if budget else None)
        st.dataframe(counts, hide_index=True, width="stretch")
        search = st.radio("Dry-run list for", ["fast", "full"], horizontal=True, key="kx_dry")
        lines = list(dry_run_lines(expr, search, limit=200))
        st.code("\n".join(lines) + ("\n…" if expr.count(search) > len(lines) else ""), language="text", wrap_lines=True)
        c1, c2 = st.columns(2)
        c1.download_button(
            "Save expression file", "".join(f"{t}\n" for t in str(expr).split()),
            file_name="expression.txt", mime="text/plain",
        )
        if c2.button("Use in New run", key="kx_use"):
            state.put(state.EXPRESSION, str(expr))
            st.switch_page("app_pages/2_New_run.py")

st.subheader("Diff two knob databases")
c1, c2 = st.columns(2)
old_up = c1.file_uploader("Old (e.g. TensorRT 11.1)", type=["json"], key="kx_diff_old")
new_up = c2.file_uploader("New (e.g. TensorRT 11.2)", type=["json"], key="kx_diff_new")
old_db = _db_from_upload(old_up) if old_up is not None else db
new_db = _db_from_upload(new_up) if new_up is not None else None
if old_db is not None and new_db is not None:
    diff = diff_knob_databases(old_db, new_db)
    if diff.empty:
        st.success(f"No differences between {diff.old_version} and {diff.new_version}.")
    else:
        st.dataframe(views.diff_frame(diff), hide_index=True, width="stretch")
else:
    st.caption("Upload the new database (the old one defaults to the database shown above).")
