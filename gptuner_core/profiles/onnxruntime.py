"""Per-node profile of an ONNX Runtime candidate from the session profiler's JSON trace.

:func:`profile` opens a *new* ``InferenceSession`` on the candidate's transformed model with the
candidate's session options plus ``enable_profiling`` (the measured session is never touched, so
the latency samples cannot be distorted), runs ``warmup + runs`` inferences, ends profiling and
parses the trace with :func:`parse_trace`. The session also writes the graph it really runs
(``optimized_model_filepath``), whose node domains, inputs and outputs feed the origin mapping
(:mod:`gptuner_core.profiles.origins`) back to the user's model.

Trace format (Chrome trace events, as ORT writes them): one ``{"cat": "Session", "name":
"model_run", "ts", "dur"}`` per run and one ``{"cat": "Node", "name": "<node>_kernel_time", "dur",
"args": {"op_name", "provider", "input_type_shape": [{dtype: shape}, ...]}}`` per node execution;
times in microseconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ProfileError
from gptuner_core.profiles.origins import OnnxOrigins
from gptuner_core.profiles.records import LayerProfile
from gptuner_core.profiles.records import LayerTime


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.backends._base import BuildResult

SOURCE = "onnxruntime session profiler (separate session)"
_DTYPES = {
    "float": "FP32", "double": "FP64", "float16": "FP16", "bfloat16": "BF16", "uint8": "INT8",
    "int8": "INT8", "int4": "INT4", "uint4": "INT4", "int32": "INT32", "int64": "INT64",
    "uint16": "INT16", "int16": "INT16", "bool": "BOOL",
}
_SUFFIX = "_kernel_time"


def _precision(args: Mapping[str, Any]) -> str:
    for entry in args.get("input_type_shape") or ():
        if isinstance(entry, dict) and entry:
            dtype = next(iter(entry))
            return _DTYPES.get(str(dtype), str(dtype).upper())
    return ""


def _graph_nodes(path: Path | None) -> dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """Runtime node name -> (domain, inputs, outputs) from the optimized model ORT wrote."""
    if path is None or not path.is_file():
        return {}
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - the graph only refines origins; the times stand without it
        return {}
    return {n.name: (n.domain, tuple(n.input), tuple(n.output)) for n in model.graph.node}


def parse_trace(
    events: list[dict[str, Any]],
    *,
    warmup: int = 0,
    origins: OnnxOrigins | None = None,
    graph: Mapping[str, tuple[str, tuple[str, ...], tuple[str, ...]]] | None = None,
) -> LayerProfile:
    """A :class:`LayerProfile` from ORT trace events, dropping the first ``warmup`` runs."""
    if not isinstance(events, list):
        msg = f"onnxruntime profile: expected a JSON list of trace events (got {type(events).__name__})"
        raise ProfileError(msg)
    runs = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        for e in events
        if isinstance(e, dict) and e.get("cat") == "Session" and e.get("name") == "model_run"
    )
    kept = runs[warmup:]
    if not kept:
        msg = (
            f"onnxruntime profile: the trace has {len(runs)} model_run event(s), none left after "
            f"{warmup} warm-up run(s) (expected at least one profiled run)"
        )
        raise ProfileError(msg)
    graph = graph or {}
    per_run: dict[str, list[float]] = {}
    calls: dict[str, int] = {}
    meta: dict[str, tuple[str, str, str]] = {}
    for e in events:
        if not isinstance(e, dict) or e.get("cat") != "Node" or not str(e.get("name", "")).endswith(_SUFFIX):
            continue
        ts = float(e.get("ts", 0.0))
        index = next((i for i, (a, b) in enumerate(kept) if a <= ts <= b), None)
        if index is None:
            continue
        name = str(e["name"])[: -len(_SUFFIX)]
        args = e.get("args") or {}
        if name not in per_run:
            per_run[name] = [0.0] * len(kept)
            meta[name] = (str(args.get("op_name", "")), _precision(args), str(args.get("provider", "")))
        per_run[name][index] += float(e.get("dur", 0.0)) / 1000.0
        calls[name] = calls.get(name, 0) + 1
    layers = []
    unmapped = []
    for name, times in per_run.items():
        op, precision, provider = meta[name]
        domain, inputs, outputs = graph.get(name, ("", (), ()))
        found = origins.resolve(name, op, inputs, outputs) if origins is not None else ()
        if origins is not None and not found:
            unmapped.append(name)
        detail = provider.replace("ExecutionProvider", "")
        if domain:
            detail += f" ({domain})"
        layers.append(LayerTime(
            name=name, kind=op, precision=precision, time_ms=sum(times) / len(times),
            run_ms=tuple(times), calls=max(1, round(calls[name] / len(kept))), origins=found,
            detail=detail,
        ))
    notes = []
    if unmapped:
        notes.append(f"{len(unmapped)} layer(s) not mapped to an ONNX node: {', '.join(unmapped[:8])}")
    wall = sum(b - a for a, b in kept) / len(kept) / 1000.0
    return LayerProfile(
        backend="onnxruntime", source=SOURCE, runs=len(kept), layers=tuple(layers), wall_ms=wall,
        origin_ops=origins.ops if origins is not None else {}, notes=tuple(notes),
    )


def profile(
    build: BuildResult,
    feeds: dict[str, np.ndarray],
    *,
    workdir: str | Path,
    model: str | Path | None = None,
    runs: int = 30,
    warmup: int = 5,
) -> LayerProfile:
    """Profile ``build`` in a new session; ``model`` is the user's ONNX model (origins).

    Args:
        build: the candidate's build result (``info`` names the transformed model and options).
        feeds: the inputs the latency was measured on (one batch).
        workdir: where the trace and the runtime graph are written (``profile/`` inside it).
        model: the user's model; origins name its nodes (default: the transformed model).
        runs: profiled inferences averaged per layer; warmup: inferences dropped first.
    """
    import onnxruntime as ort

    from gptuner_core.backends.onnxruntime import session as S

    try:
        transformed = Path(build.info["transformed_model"])
        values = dict(build.info.get("session_values") or {})
    except (KeyError, TypeError):
        msg = (
            "onnxruntime profile: the build result lacks 'transformed_model' "
            f"(info keys: {sorted(build.info)}); expected an onnxruntime build"
        )
        raise ProfileError(msg) from None
    out = Path(workdir) / "profile"
    out.mkdir(parents=True, exist_ok=True)
    runtime_graph = out / "runtime_graph.onnx"
    so = S.session_options(values, str(runtime_graph))
    so.enable_profiling = True
    so.profile_file_prefix = str(out / "ort_trace")
    sess = ort.InferenceSession(str(transformed), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    try:
        for _ in range(max(0, warmup) + max(1, runs)):
            sess.run(names, feeds)
    finally:
        trace = Path(sess.end_profiling())
    events = json.loads(trace.read_text())
    origins = OnnxOrigins.from_model(model or transformed)
    return parse_trace(events, warmup=warmup, origins=origins, graph=_graph_nodes(runtime_graph))
