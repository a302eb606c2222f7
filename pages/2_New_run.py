"""New run: model, dataset, accuracy gate, strategy, budgets; Start launches a detached tuner."""

from __future__ import annotations

import streamlit as st

from gptuner_core import views
from gptuner_core.config import METRICS
from gptuner_core.config import StudyConfig
from gptuner_core.dashboard import data
from gptuner_core.dashboard import launch
from gptuner_core.dashboard import state
from gptuner_core.dashboard import widgets
from gptuner_core.dashboard.workspace import MAX_UPLOAD_MB
from gptuner_core.dashboard.workspace import bundled_samples
from gptuner_core.dashboard.workspace import check_dataset_matches
from gptuner_core.dashboard.workspace import new_study_dir
from gptuner_core.dashboard.workspace import save_upload
from gptuner_core.errors import GptunerError
from gptuner_core.expressions import Expression


ws = widgets.page_setup("New run", "🚀")
st.title("New tuning run")
with st.expander("Backends on this machine"):
    widgets.backend_status()

# -- model and dataset ------------------------------------------------------------------------
st.subheader("Model and data")
samples = {s.name: s for s in bundled_samples()}
source = st.radio("Model", ["Bundled sample", "Upload"], horizontal=True, key="nr_source",
                  index=0 if samples else 1)
model = dataset = None
if source == "Bundled sample" and samples:
    pick = st.selectbox("Sample model", list(samples), key="nr_sample")
    model, dataset = samples[pick].model, samples[pick].dataset
else:
    up = st.file_uploader(f"ONNX model (≤ {MAX_UPLOAD_MB} MB)", type=["onnx"], key="nr_model_file",
                          max_upload_size=MAX_UPLOAD_MB)
    if up is not None:
        try:
            model = save_upload(ws, up.name, up.getvalue(), kind="model")
        except GptunerError as exc:
            st.error(str(exc))
ds_up = st.file_uploader(
    "Dataset / reference inputs (.npz, one array per model input, optional 'labels')"
    + (f" — default: {dataset.name}" if dataset else " — none: inputs are synthesized"),
    type=["npz"], key="nr_dataset_file", max_upload_size=MAX_UPLOAD_MB,
)
if ds_up is not None:
    try:
        dataset = save_upload(ws, ds_up.name, ds_up.getvalue(), kind="dataset")
    except GptunerError as exc:
        st.error(str(exc))
        dataset = None
if model is not None and dataset is not None:
    try:
        check_dataset_matches(model, dataset)
    except GptunerError as exc:
        st.error(str(exc))
        dataset = None

# -- backend and expression --------------------------------------------------------------------
st.subheader("Backend and knobs")
avail = {n: a for n, a in data.backends()}
usable = [n for n, a in avail.items() if a.available and n != "replay"]
backend = st.selectbox("Backend", usable, key="nr_backend",
                       index=usable.index("tensorrt") if "tensorrt" in usable else
                       (usable.index("onnxruntime") if "onnxruntime" in usable else 0))
db = None
if not usable:
    st.warning("No backend can run here; see 'Backends on this machine' above.")
elif model is not None:
    try:
        db = data.knob_database(backend, str(model), model.stat().st_mtime_ns)
    except GptunerError as exc:
        st.error(f"{backend} cannot describe {model.name}: {exc}")
#: a first expression per backend with real trade-offs: INT8 speed-ups, a route the accuracy
#: gate must exclude (int4 weights on the CNN), a slow one (dynamic Conv); a few minutes on 2 cores
STARTERS = {"onnxruntime": "-quant:mode=[off|qdq|qoperator|dynamic] -quant:reduce_range=[off|on] "
                           "-quant:weight_type=[int8|int4] -ort:intra_op_num_threads=[0|1]"}
default_expr = state.get(state.EXPRESSION) or ""
if not default_expr and db is not None:
    starter = STARTERS.get(backend, "")
    if starter and all(tok.split("=", 1)[0] in db for tok in starter.split()):
        default_expr = starter
    else:
        binary = [k for k in db if k.values and len(k.values) == 2][:3]
        default_expr = " ".join(f"{k.name}=[{'|'.join(k.values)}]" for k in binary)
expression = st.text_area("Tunable expression (build it in the Knob explorer)", value=default_expr,
                          height=80)
expr = None
if db is not None and expression.strip():
    try:
        expr = Expression.parse(expression.strip(), db)
    except GptunerError as exc:
        st.error(f"Invalid expression: {exc}")
backend_options = {}
try:
    from gptuner_core.backends import backend_class

    declared = backend_class(backend).option_declarations
except GptunerError:
    declared = {}
if declared:
    with st.expander("Backend options"):
        for key, (desc, default) in declared.items():
            text = st.text_input(f"{key} — {desc}", value="" if default is None else str(default),
                                 key=f"nr_bopt_{key}")
            if text != ("" if default is None else str(default)):
                backend_options[key] = text

# -- accuracy ----------------------------------------------------------------------------------
st.subheader("Accuracy gate")
c1, c2, c3 = st.columns(3)
metric = c1.selectbox("Metric (per output)", list(METRICS), index=list(METRICS).index("l2"), key="nr_metric")
use_eps = c2.checkbox("Gate on ε", value=True, key="nr_use_eps")
epsilon = c3.number_input("ε (route fails if loss ≥ ε)", min_value=0.0, value=1e-3, format="%g",
                          key="nr_eps", disabled=not use_eps)
c1, c2 = st.columns(2)
task = c1.selectbox("Task metric", ["none", "top1"], key="nr_task",
                    help="top1 needs a dataset with 'labels'")
max_drop = c2.number_input("Max drop of the task metric", min_value=0.0, value=0.01, format="%g",
                           key="nr_drop", disabled=task == "none")

# -- strategy and budgets ----------------------------------------------------------------------
st.subheader("Strategy and budgets")
try:
    choices = {c.name: c for c in launch.strategy_choices()}
except (ImportError, GptunerError) as exc:
    st.warning(f"Strategy registry unavailable ({exc}); offering trtexec's searches only.")
    choices = {n: launch.StrategyChoice(name=n, summary="", options={}) for n in ("fast", "full", "mixed")}
search = st.selectbox("Strategy", list(choices), key="nr_search",
                      format_func=lambda n: f"{n} — {choices[n].summary}" if choices[n].summary else n)
strategy_options = {}
for key, opt in choices[search].options.items():
    default = getattr(opt, "default", None)
    text = st.text_input(f"{search}.{key} — {getattr(opt, 'description', '')}",
                         value="" if default is None else str(default), key=f"nr_sopt_{search}_{key}")
    if text != ("" if default is None else str(default)):
        strategy_options[key] = text
c1, c2, c3 = st.columns(3)
max_candidates = c1.number_input("Max candidates (0 = no limit)", 0, 1_000_000, 0, key="nr_maxc")
minutes = c2.number_input("Time budget, minutes (0 = none)", 0.0, 10_000.0, 0.0, key="nr_time")
target = c3.number_input("Stop at speedup (0 = never)", 0.0, 100.0, 0.0, key="nr_target")
if expr is not None:
    counts = views.route_counts(expr, int(max_candidates) or None)
    st.caption(" · ".join(f"{k}: {v:,} routes" for k, v in counts.items()))

# -- start -------------------------------------------------------------------------------------
name = st.text_input("Study name", value=(model.stem if model is not None else "study"))
config = None
config_error = ""
if model is not None and expr is not None:
    try:
        config = StudyConfig(
            model=str(model), backend=backend, expression=str(expr), search=search,
            strategy_options=strategy_options, dataset=str(dataset) if dataset else None,
            metric=metric, epsilon=float(epsilon) if use_eps else None,
            task_metric=None if task == "none" else task,
            max_task_drop=float(max_drop) if task != "none" else None,
            max_candidates=int(max_candidates) or None, time_budget_s=minutes * 60 or None,
            target_speedup=target or None, backend_options=backend_options,
        )
    except GptunerError as exc:
        config_error = str(exc)
        st.error(config_error)
    else:
        st.code(launch.command(ws / name), language="bash")
if st.button("Start tuning", type="primary", disabled=config is None, key="nr_start",
             help=config_error or None):
    study_dir = new_study_dir(ws, name)
    try:
        pid = launch.launch(config, study_dir)
    except GptunerError as exc:
        st.error(str(exc))
    else:
        state.put(state.STUDY, study_dir.name)
        state.put(state.EXPRESSION, "")
        state.put(state.LAST_LAUNCH, {"study": study_dir.name, "pid": pid,
                                      "command": launch.command(study_dir)})
        st.query_params["study"] = study_dir.name
        st.switch_page("pages/3_Live.py")
