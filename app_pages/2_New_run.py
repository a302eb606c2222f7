"""New run: model, dataset, expression, accuracy gate, strategy, budgets, advanced settings; Start
launches a detached tuner. The form is generated from the CLI's declarations (forms.py)."""

from __future__ import annotations

import json

import streamlit as st

from gptuner_core.dashboard import forms
from gptuner_core.dashboard import launch
from gptuner_core.dashboard import newrun
from gptuner_core.dashboard import state
from gptuner_core.dashboard import tables
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.builder import expression_builder
from gptuner_core.dashboard.core import METRICS
from gptuner_core.dashboard.core import GptunerError
from gptuner_core.dashboard.core import StudyConfig


def start_tuner(fields: dict, study_dir, *, dry: bool = False) -> tuple[str, int | None]:
    """``StudyConfig(**fields)`` -> ``STUDY/study.json`` -> ``gptuner tune --config`` (validated
    by the CLI's own checks); the equivalent command and the tuner's pid (``None`` when ``dry``)."""
    config = StudyConfig(**fields)
    return launch.command(study_dir), None if dry else launch.launch(config, study_dir)


ws = widgets.page_setup("New run", "🚀")
st.title("New tuning run")
with st.expander("Backends on this machine"):
    widgets.backend_status()

st.subheader("Model and data")
model = newrun.model_section(ws)
st.subheader("Backend and knobs")
backend = newrun.backend_section(model.fields["model"])
db = backend.extra.get("db")
expr_problems: list[str] = []
expression = ""
if db is not None:
    initial = newrun.starter_expression(backend.fields["backend"], db)
    # one builder per backend: switching models keeps each backend's expression work
    text, expr = expression_builder(db, key=f"nr_expr_{backend.fields['backend']}", initial=initial,
                                    label="Tunable expression (build it here or in the Knob explorer)")
    expression = str(expr) if expr is not None else ""
    if expr is None:
        expr_problems.append("the tunable expression is empty or invalid (see above)")
dataset_problem = newrun.check_dataset(backend.fields.get("backend", ""), model.fields["model"],
                                       model.fields["dataset"],
                                       shown=model.extra.get("dataset_name"))
if dataset_problem:
    st.error(dataset_problem)

st.subheader("Accuracy gate")
accuracy = newrun.accuracy_section(METRICS, has_labels=model.extra["labels"])
st.subheader("Strategy and budgets")
strategy = newrun.strategy_section()
budgets, budget_problems = forms.number_fields(forms.BASIC, key="nr_budget")
if expression:
    st.caption("Routes each strategy would run (capped by max candidates):")
    # every strategy's row in view (the grid's fixed height cut its last rows in half)
    tables.static_table(forms.strategy_counts_cached(expression, db, budgets.get("max_candidates")))
advanced = newrun.advanced_section(ws)

fields = {**model.fields, **backend.fields, "expression": expression, **accuracy.fields,
          **strategy.fields, **budgets, **advanced.fields}
problems = [*model.problems, *backend.problems, *expr_problems,
            *([dataset_problem] if dataset_problem else []), *accuracy.problems,
            *strategy.problems, *budget_problems, *advanced.problems]
if not problems:
    problems = forms.check_fields(fields)

st.subheader("Start")
name = newrun.study_name_input(model.extra["name"])
study_dir = newrun.study_target(ws, name)
if not problems:
    command, _ = start_tuner(fields, study_dir, dry=True)
    st.code(command, language="bash", wrap_lines=True)
    st.caption("study.json, written into the study folder on Start:")
    st.code(json.dumps(StudyConfig(**fields).to_json(), indent=1), language="json")
else:
    st.warning("**Start is disabled** until these are fixed:\n" + "\n".join(f"- {p}" for p in problems))
if st.button("Start tuning", type="primary", disabled=bool(problems), key="nr_start",
             help="; ".join(problems) or None):
    try:
        command, pid = start_tuner(fields, study_dir)
    except GptunerError as exc:
        st.error(str(exc))
    else:
        state.put(state.STUDY, study_dir.name)
        state.put(state.EXPRESSION, "")
        state.put(state.LAST_LAUNCH, {"study": study_dir.name, "pid": pid,
                                      "command": command})
        st.query_params["study"] = study_dir.name
        st.switch_page("app_pages/3_Live.py")
