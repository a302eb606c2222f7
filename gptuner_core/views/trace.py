"""One candidate in detail (route trace) and several side by side (compare)."""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.views._frames import route_pairs


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import pandas as pd

    from gptuner_core.records import CandidateRecord

#: Keys of ``CandidateRecord.extra`` that may hold per-layer rows (list of dicts).
LAYER_KEYS = ("layers", "layer_info", "per_layer", "profile", "nodes")


def _fmt_size(n: int | None) -> str:
    if n is None:
        return "—"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _fmt_s(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f} s"


def trace_fields(record: CandidateRecord) -> pd.DataFrame:
    """Two-column table (field, value) of everything the store knows about one candidate."""
    import pandas as pd

    lat = record.latency
    rows: list[tuple[str, str]] = [
        ("number", str(record.number)),
        ("state", record.state.value),
        ("error", record.error or "—"),
        ("requested route", record.requested_route or "(default)"),
        ("effective route", record.effective_route or "—"),
        ("build time", _fmt_s(record.build_time_s)),
        ("measure time", _fmt_s(record.measure_time_s)),
        ("artifact path", record.artifact_path or "—"),
        ("artifact sha256", record.artifact_sha256 or "—"),
        ("artifact size", _fmt_size(record.artifact_size)),
        ("duplicate of", "—" if record.duplicate_of is None else f"#{record.duplicate_of}"),
    ]
    if lat is not None:
        rows += [
            ("median latency", f"{lat.median_ms:.4g} ms (95 % CI {lat.ci_low_ms:.4g}–{lat.ci_high_ms:.4g})"),
            ("p5 / p95 / p99", f"{lat.p5_ms:.4g} / {lat.p95_ms:.4g} / {lat.p99_ms:.4g} ms"),
            ("CV", f"{lat.cv:.2%}"),
            ("samples", f"{lat.n_samples} × {lat.calls_per_sample} call(s), stop: {lat.stop_reason or '—'}"),
        ]
    if record.speedup is not None:
        ci = record.speedup_ci
        text = f"{record.speedup:.3f}x" + (f" (CI {ci[0]:.3f}–{ci[1]:.3f})" if ci else "")
        rows.append(("screening speed-up vs default", text))  # never the verdict's
    if record.strategy_info:
        rows.append(("strategy info", str(record.strategy_info)))
    return pd.DataFrame(rows, columns=["field", "value"])


def route_diff_frame(routes: Mapping[str, str | None]) -> pd.DataFrame:
    """Knob-by-route table (one column per label) with a ``differs`` column.

    A knob missing from a route is shown as ``(default)``: routes list only the knobs they set.
    """
    import pandas as pd

    parsed = {label: route_pairs(text) for label, text in routes.items()}
    names: list[str] = []
    for pairs in parsed.values():
        names += [n for n in pairs if n not in names]
    data = {label: [pairs.get(n, "(default)") for n in names] for label, pairs in parsed.items()}
    df = pd.DataFrame(data, index=pd.Index(names, name="knob"))
    df["differs"] = df.nunique(axis=1) > 1 if len(df.columns) else False
    return df.reset_index()


def accuracy_frame(records: Sequence[CandidateRecord]) -> pd.DataFrame:
    """Per-output and per-slice loss (rows) by candidate (columns ``#n``); a task-metric row when
    present, and a row per detail a built-in task metric reported (``detection: recall``)."""
    import pandas as pd

    data: dict[str, dict[str, float]] = {}
    for r in records:
        col: dict[str, float] = {}
        if r.accuracy is not None:
            col.update({f"{k} ({r.accuracy.metric})": v for k, v in r.accuracy.losses.items()})
            if r.accuracy.task_metric is not None:
                col[r.accuracy.task_metric_name or "task metric"] = r.accuracy.task_metric
            task = (r.accuracy.task_metric_name or "task metric").split("(")[0]
            col.update({f"{task}: {k}": v for k, v in r.accuracy.task_details.items()})
        data[f"#{r.number}"] = col
    df = pd.DataFrame(data)
    df.index.name = "output"
    return df.reset_index()


def layers_frame(extra: Mapping[str, Any]) -> pd.DataFrame | None:
    """Per-layer rows from ``extra`` or the backend's build info ``extra["info"]``: the first of
    :data:`LAYER_KEYS` holding a list of dicts, else per-op counts (``op_counts``) as
    ``name``/``count`` rows. ``None`` when the backend recorded neither."""
    import pandas as pd

    info = extra.get("info")
    sources = [extra, info] if isinstance(info, dict) else [extra]
    for src in sources:
        for key in LAYER_KEYS:
            rows = src.get(key)
            if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
                return pd.DataFrame(rows)
    for src in sources:
        counts = src.get("op_counts")
        if isinstance(counts, dict) and counts:
            return pd.DataFrame({"name": list(counts), "count": list(counts.values())})
    return None


def _layer_name_column(df: pd.DataFrame) -> str | None:
    for c in ("name", "layer", "node", "op_name"):
        if c in df.columns:
            return c
    return None


def layer_diff_frame(extras: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame | None:
    """Per-layer values of several candidates aligned on the layer name (outer join).

    Returns ``None`` when fewer than two candidates carry per-layer rows with a name column.
    """
    import pandas as pd

    frames = []
    for label, extra in extras.items():
        df = layers_frame(extra)
        if df is None:
            continue
        key = _layer_name_column(df)
        if key is None:
            continue
        df = df.drop_duplicates(subset=key).set_index(key)
        frames.append(df.add_prefix(f"{label} "))
    if len(frames) < 2:
        return None
    merged = pd.concat(frames, axis=1, join="outer")
    merged.index.name = "layer"
    return merged.reset_index()


def repro_commands(
    config: Mapping[str, Any],
    record: CandidateRecord,
    *,
    study_dir: str,
    backend_repro: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Commands that rebuild and time this candidate's route outside the study.

    Always a ``gptuner tune`` command pinned to the route; plus whatever the backend provides
    (e.g. ``trtexec --setBuildRoute``) in ``backend_repro``.
    """
    model = str(config.get("model", "MODEL"))
    backend = str(config.get("backend", "onnxruntime"))
    route = record.effective_route or record.requested_route
    parts = ["gptuner", "tune", model, "--backend", backend]
    if route:
        parts += ["--expr", repro_expression(route)]
    # one route, each knob a variable of one value: full search measures the database default
    # (#0) and the route, so the study prints the route's speed-up against the default (the
    # route pinned as plain -k=v became its own default: "no winner: keeping the default")
    parts += ["--search", "full"]
    if config.get("dataset"):
        parts += ["--dataset", str(config["dataset"])]
    parts += settings_flags(config)
    parts += ["--study", f"{study_dir.rstrip('/')}-repro-{record.number}"]
    out = {"gptuner": shlex.join(parts)}
    if record.artifact_path and _kept(record.artifact_path, study_dir):  # none: no checksum
        out["artifact"] = f"sha256sum {shlex.quote(record.artifact_path)}  # expect {record.artifact_sha256 or '?'}"
    out.update(backend_repro or {})
    return out


#: a repro study's folder: the study's, ``-repro-`` and the candidate's number
REPRO_RE = re.compile(r".+-repro-\d+")


def is_repro(name: str) -> bool:
    """Whether study folder ``name`` is a Route trace repro (never a page's default study)."""
    return REPRO_RE.fullmatch(name) is not None


def repro_expression(route: str) -> str:
    """``-k=v -j=w`` -> ``-k=[v] -j=[w]``: the route as the one route of a space whose
    default route (each knob's database default) is measured beside it."""
    terms = []
    for token in route.split():
        name, eq, value = token.partition("=")
        bare = value.startswith("[") and value.endswith("]")
        terms.append(f"{name}=[{value}]" if eq and not bare else token)
    return " ".join(terms)


def _kept(artifact: str, study_dir: str) -> bool:
    from pathlib import Path

    path = Path(artifact)
    return (path if path.is_absolute() else Path(study_dir) / path).exists()


#: StudyConfig fields carried by a repro command as plain ``--flag VALUE`` (the gate, the inputs
#: and how latency is measured: what decides whether the route passes and how fast it is)
_VALUE_FLAGS = (("metric", "--metric"), ("atol", "--atol"), ("rtol", "--rtol"),
                ("batch_size", "--batch-size"), ("task_output", "--task-output"),
                ("task_metric", "--task-metric"), ("max_task_drop", "--max-task-drop"),
                ("shapes", "--shapes"), ("batch_axes", "--batch-axes"),
                ("input_ranges", "--input-range"), ("calibration", "--calibration"),
                ("shape_objective", "--shape-objective"))


def _option_text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


def settings_flags(config: Mapping[str, Any]) -> list[str]:
    """The study's settings that decide a route's verdict, as ``gptuner tune`` flags: the
    accuracy gate (ε per output, or ``--no-gate``), metric, task metric, shapes, backend and
    measurement options. A repro without them is refused (``no accuracy gate``) or differs."""
    from gptuner_core.config import StudyConfig

    defaults = StudyConfig(model="m").to_json()
    out: list[str] = []
    for name, flag in _VALUE_FLAGS:
        value = config.get(name)
        if value is not None and value != defaults.get(name):
            out += [flag, str(value)]
    if config.get("epsilon") is not None:
        out += ["--epsilon", repr(float(config["epsilon"]))]
    for output, eps in (config.get("output_epsilons") or {}).items():
        out += ["--epsilon", f"{output}={float(eps)!r}"]
    if config.get("gate_outputs"):
        out += ["--gate-outputs", ",".join(config["gate_outputs"])]
    if config.get("no_gate"):
        out.append("--no-gate")
    for key, value in (config.get("backend_options") or {}).items():
        out += ["--backend-option", f"{key}={_option_text(value)}"]
    for key, value in (config.get("measurement") or {}).items():
        out += ["--measure-option", f"{key}={_option_text(value)}"]
    for shape in config.get("measure_shapes") or ():
        out += ["--measure-shapes", shape]
    return out


def state_line(record: CandidateRecord) -> str:
    """The candidate's state in one line; a duplicate names the candidate it repeats."""
    line = f"#{record.number}: {record.state.value}"
    if record.duplicate_of is not None:
        line += (f" of #{record.duplicate_of} (the same effective route: not built or measured "
                 f"again; its numbers are #{record.duplicate_of}'s)")
    return line + (f" — {record.error}" if record.error else "")


def no_log_line(record: CandidateRecord, *, original_has_log: bool = True) -> str:
    """Why a candidate has no log to show (never an empty section); a DUPLICATE points at its
    original's trace only when that one has a log."""
    if record.duplicate_of is not None and not original_has_log:
        return (f"#{record.number} has no log of its own: it repeats #{record.duplicate_of}, "
                f"which kept none either; both builds' lines are in the study's tuner.log.")
    if record.duplicate_of is not None:
        return (f"#{record.number} has no log of its own: it repeats #{record.duplicate_of}, "
                f"whose log is on its trace.")
    return (f"No log was kept for #{record.number} ({record.state.value}): the tuner wrote its "
            "build and measurement lines to the study's tuner.log.")
