"""The sections of the New run page: model and data, backend and expression, accuracy gate,
strategy, budgets, advanced settings. Each returns ``StudyConfig`` fields and problems; the page
shows every problem next to its field and once more beside the disabled Start button."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import streamlit as st

from gptuner_core.dashboard import data
from gptuner_core.dashboard import forms
from gptuner_core.dashboard import state
from gptuner_core.dashboard.sections import section
from gptuner_core.errors import GptunerError


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """What one part of the form collected: config fields and problems (one line each)."""

    fields: dict[str, Any] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def model_section(ws: Path) -> Section:
    """Bundled sample or upload, and the dataset; checks the dataset against the model.

    An uploaded ``.py`` factory (or ``.pt2`` program) is code: until the user confirms the
    named file, the section returns no model, so nothing reads or runs it.
    """
    from gptuner_core.dashboard.workspace import MAX_UPLOAD_MB
    from gptuner_core.dashboard.workspace import MODEL_SUFFIXES
    from gptuner_core.dashboard.workspace import bundled_samples
    from gptuner_core.dashboard.workspace import dataset_has_labels
    from gptuner_core.dashboard.workspace import save_upload

    problems: list[str] = []
    name = ""
    samples = {s.name: s for s in bundled_samples()}
    source = st.radio("Model", ["Bundled sample", "Upload"], horizontal=True, key="nr_source",
                      index=0 if samples else 1)
    model = dataset = None
    if source == "Bundled sample" and samples:
        pick = st.selectbox("Sample model", list(samples), key="nr_sample")
        model, dataset = samples[pick].model, samples[pick].dataset
        name = samples[pick].file.stem
    else:
        up = st.file_uploader(
            f"Model (≤ {MAX_UPLOAD_MB} MB): .onnx, or for the torch backend a .py file with "
            "factory() -> (module, example_inputs) or a torch.export .pt2",
            type=[s.lstrip(".") for s in MODEL_SUFFIXES], key="nr_model_file",
            max_upload_size=MAX_UPLOAD_MB)
        if up is not None:
            try:
                saved = save_upload(ws, up.name, up.getvalue(), kind="model")
            except GptunerError as exc:
                st.error(str(exc))
                problems.append(str(exc))
            else:
                name = Path(up.name).stem
                model, problem = _trusted_model(saved, up.name)
                if problem:
                    problems.append(problem)
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
            problems.append(str(exc))
            dataset = None
    if model is None and not problems:
        problems.append("no model: choose a bundled sample or upload an .onnx, .py or .pt2 file")
    labels = bool(dataset) and dataset_has_labels(dataset)
    return Section(fields={"model": str(model) if model else "",
                           "dataset": str(dataset) if dataset else None},
                   problems=tuple(problems), extra={"labels": labels, "name": name or "study",
                                                    "dataset_name": ds_up.name if ds_up else None})


def _trusted_model(saved: Path, name: str) -> tuple[str | None, str | None]:
    """The model reference of an upload, once it may run: an ONNX file at once; a ``.py``
    factory or ``.pt2`` only after the user confirmed the named file (kept per session)."""
    from gptuner_core.dashboard import widgets
    from gptuner_core.dashboard.trust import code_references
    from gptuner_core.dashboard.workspace import FACTORY

    model = f"{saved}:{FACTORY}" if saved.suffix == ".py" else str(saved)
    refs = code_references({"model": model, "backend": "torch"})
    trusted = state.get(state.TRUSTED_UPLOADS) or ()
    if not refs or str(saved) in trusted:
        return model, None
    if widgets.confirm_code(refs, key="nr_trust_upload", action=f"use the uploaded '{name}'"):
        state.put(state.TRUSTED_UPLOADS, (*trusted, str(saved)))
        st.rerun()
    return None, (f"the uploaded '{name}' is code the dashboard and the tuner would run: "
                  "confirm it above before it is used")


@st.cache_data(max_entries=32, show_spinner=False)
def _dataset_fit(backend: str, model: str, model_stamp: int, dataset: str, stamp: int) -> str | None:
    """Why ``dataset`` does not fit ``model`` (None when it does), once per pair of file versions:
    reading a dataset took 0.13 s of every New run rerun."""
    from gptuner_core.dataset import load_dataset

    try:
        load_dataset(dataset, data.input_specs(backend, model, model_stamp))
    except (GptunerError, OSError, ValueError) as exc:
        return f"dataset '{Path(dataset).name}' does not fit model '{Path(model).name}': {exc}"
    return None


def check_dataset(backend: str, model: str, dataset: str | None, *,
                  shown: str | None = None) -> str | None:
    """One line when the dataset does not fit the model's inputs (names, rank, dtype). An
    upload is named ``shown``, as the user uploaded it, not by the workspace's hashed copy."""
    if not dataset or not model:
        return None
    from gptuner_core.dashboard.workspace import model_file

    try:
        model_stamp = model_file(model).stat().st_mtime_ns
        stamp = Path(dataset).stat().st_mtime_ns
    except OSError as exc:
        problem = f"dataset '{Path(dataset).name}' does not fit model '{Path(model).name}': {exc}"
    else:
        problem = _dataset_fit(backend, model, model_stamp, dataset, stamp)
    if problem and shown:
        problem = problem.replace(str(dataset), shown).replace(Path(dataset).name, shown)
    return problem


def backend_section(model: str) -> Section:
    """Backend choice, its knob database and options (paths confined to the workspace)."""
    from gptuner_core.dashboard import widgets
    from gptuner_core.dashboard.trust import check_path_options
    from gptuner_core.dashboard.workspace import is_torch_model
    from gptuner_core.dashboard.workspace import model_file
    from gptuner_core.dashboard.workspace import workspace_dir

    avail = dict(data.backends())
    torch_model = bool(model) and is_torch_model(model)
    usable = [n for n, a in avail.items() if a.available and n != "replay"
              and (n == "torch") == torch_model]
    if not usable:
        if torch_model:
            reason = getattr(avail.get("torch"), "reason", "") or "not registered"
            line = f"{Path(model).name} needs the torch backend, which cannot run here ({reason})"
            st.error(line)
            return Section(problems=(line,))
        st.warning("No backend can run here:")
        widgets.backend_status()
        return Section(problems=("no backend can run on this machine",))
    preferred = next((b for b in ("tensorrt", "onnxruntime") if b in usable), usable[0])
    backend = st.selectbox("Backend", usable, key="nr_backend", index=usable.index(preferred))
    problems: list[str] = []
    db = None
    if model:
        try:
            db = data.knob_database(backend, model, model_file(model).stat().st_mtime_ns)
        except (GptunerError, OSError) as exc:
            line = f"{backend} cannot describe {Path(model).name}: {exc}"
            st.error(line)
            problems.append(line)
    with section("Backend options", key="nr_bopt_open") as ui:
        options, opt_problems = forms.backend_options_form(backend, key="nr_bopt", ui=ui)
        outside = check_path_options(options, workspace_dir())
        for line in outside:
            ui.error(line)
    problems += opt_problems + outside
    return Section(fields={"backend": backend, "backend_options": options},
                   problems=tuple(problems), extra={"db": db})


def accuracy_section(metrics: tuple[str, ...], *, has_labels: bool) -> Section:
    """Element-wise gate (metric, ε) and task metric (top1 by default when there are labels)."""
    problems: list[str] = []
    c1, c2, c3 = st.columns(3)
    metric = c1.selectbox("Metric (per output)", list(metrics), index=list(metrics).index("l2"),
                          key="nr_metric")
    use_eps = c2.checkbox("Gate on ε (a study needs a gate or No gate)", value=False, key="nr_use_eps")
    epsilon = None
    if use_eps:
        with c3:
            epsilon, problem = forms.number_input(
                forms.NumberField(name="epsilon", label="ε (route fails if loss ≥ ε)", minimum=0,
                                  exclusive=True), key="nr_eps", default=1e-3)
        if problem:
            problems.append(problem)
    no_gate = False
    if not use_eps:  # a study needs a gate unless asked explicitly for none (the CLI's --no-gate)
        no_gate = c3.checkbox("No gate (--no-gate: rank by speed only)", value=False,
                              key="nr_no_gate")
    c1, c2 = st.columns(2)
    tasks = ["top1", "none"] if has_labels else ["none", "top1"]
    # keyed by whether there are labels, so the default follows the dataset when it changes
    task = c1.selectbox("Task metric", tasks, key="nr_task" if has_labels else "nr_task_unlabelled",
                        help="top1 needs a dataset with 'labels' (the default when it has them)")
    if task == "top1" and not has_labels:
        line = "task metric top1 needs a dataset with a 'labels' array (this one has none)"
        c1.error(line)
        problems.append(line)
    max_drop = None
    if task != "none":
        with c2:
            max_drop, problem = forms.number_input(
                forms.NumberField(name="max_task_drop",
                                  label="Max drop of the task metric (blank = recorded, not gated)",
                                  minimum=0, optional=True), key="nr_drop")
        if problem:
            problems.append(problem)
    return Section(fields={"metric": metric, "epsilon": epsilon,
                           "task_metric": None if task == "none" else task,
                           "max_task_drop": max_drop, **({"no_gate": True} if no_gate else {})},
                   problems=tuple(problems))


def strategy_section() -> Section:
    """Strategy (default: the CLI's) with its options, descriptions and defaults."""
    from gptuner_core.strategies import DEFAULT_STRATEGY
    from gptuner_core.strategies import describe_strategies

    entries = {e["name"]: e for e in describe_strategies()}
    names = list(entries)
    search = st.selectbox(
        "Strategy", names, index=names.index(DEFAULT_STRATEGY), key="nr_search",
        format_func=lambda n: (f"{n} (default) — " if n == DEFAULT_STRATEGY else f"{n} — ")
        + (entries[n]["summary"] or entries[n]["reason"]),
    )
    entry = entries[search]
    problems: list[str] = []
    if not entry["available"]:
        st.error(entry["reason"])
        problems.append(entry["reason"])
    options: dict[str, Any] = {}
    if entry["options"]:
        with section(f"{search} options ({len(entry['options'])}, defaults filled in)",
                     key=f"nr_sopt_open_{search}") as ui:
            options, opt_problems = forms.strategy_options_form(entry, key="nr_sopt", ui=ui)
            problems += opt_problems
    return Section(fields={"search": search, "strategy_options": options},
                   problems=tuple(problems))


def advanced_section(ws: Path) -> Section:
    """Everything else ``gptuner tune`` takes, with the CLI's defaults."""
    from gptuner_core.dashboard.trust import check_path_options
    from gptuner_core.dashboard.workspace import study_dirs

    with section("Advanced: batch size, re-validation, drift, timeouts, measurement, "
                 "seed, warm start, output", key="nr_adv_open") as ui:
        fields, problems = forms.number_fields(forms.ADVANCED, key="nr_adv", ui=ui)
        ui.markdown("**Measurement** (`--measure-option`)")
        measurement, m_problems = forms.measurement_form(key="nr_meas", ui=ui)
        problems += m_problems
        from gptuner_core.engine.files.artifacts import DEFAULT_KEEP
        from gptuner_core.engine.files.artifacts import KEEP_MODES

        keep = ui.selectbox("Keep artifacts (--keep-artifacts)", KEEP_MODES, index=KEEP_MODES.index(DEFAULT_KEEP),
                            key="nr_keep", help="top-k: the default and the re-validation contenders; "
                            "best: the default and the winner; all: every distinct build")
        names = [p.name for p in study_dirs(ws)]
        warm = ui.multiselect("Warm start from earlier studies", names, key="nr_warm")
        output = ui.text_input("Copy the best artifact to (path in the workspace; blank = none)",
                               key="nr_output").strip()
        outside = check_path_options({"output_path": output}, ws) if output else []
        for line in outside:
            ui.error(line.replace("backend option output_path", "output"))
        problems += [line.replace("backend option output_path", "output") for line in outside]
    fields.update(measurement=measurement, keep_artifacts=keep,
                  warm_start=tuple(str(ws / n) for n in warm),
                  output=str((ws / output).resolve()) if output and not outside else None)
    return Section(fields=fields, problems=tuple(problems))


#: a first expression per backend with real trade-offs: INT8 speed-ups, a route the accuracy
#: gate must exclude (int4 weights on the CNN), a slow one; a few minutes on 2 cores
#: (torch: each route is a fresh ``torch.compile``, about a minute on 2 cores, so three routes)
STARTERS = {"onnxruntime": "-quant:mode=[off|qdq|qoperator|dynamic] -quant:reduce_range=[off|on] "
                           "-quant:weight_type=[int8|int4] -ort:intra_op_num_threads=[0|1]",
            "torch": "-torch:precision=[fp32|bf16] -inductor:freezing=[off|on]"}


def starter_expression(backend: str, db: Any) -> str:
    """The expression handed over by the Knob explorer, else a starter for this backend."""
    handed = state.get(state.EXPRESSION)
    if handed:
        return handed
    starter = STARTERS.get(backend, "")
    if starter and all(tok.split("=", 1)[0] in db for tok in starter.split()):
        return starter
    binary = [k for k in db if k.values and len(k.values) == 2][:3]
    return " ".join(f"{k.name}=[{'|'.join(k.values)}]" for k in binary)


def study_name_input(model_name: str) -> str:
    """The study name field: it follows the model (a sample or the uploaded file's own name)
    until the user types a name of their own, which is then kept."""
    auto = state.get(state.AUTO_NAME)
    if st.session_state.get("nr_name") in (None, auto):
        st.session_state["nr_name"] = model_name
    state.put(state.AUTO_NAME, model_name)
    return st.text_input("Study name", key="nr_name").strip() or model_name


def study_target(ws: Path, name: str) -> Path:
    """The folder Start will create for ``name``: chosen once and shown in the preview, so the
    command and study.json shown are the ones Start runs (a new one once that folder exists)."""
    from gptuner_core.dashboard.workspace import new_study_dir

    pending = state.get(state.PENDING_STUDY) or {}
    folder = pending.get("dir")
    if pending.get("name") != name or not folder or (ws / folder).exists():
        folder = new_study_dir(ws, name).name
        state.put(state.PENDING_STUDY, {"name": name, "dir": folder})
    return ws / folder
