"""Per-layer profile of a TensorRT engine: inspector layer JSON plus per-layer times.

Two sources of times, both written against the documented interfaces (only the parsing can be
exercised without a GPU; the tests use fixtures that follow the documented schemas):

* an ``IProfiler`` run (:func:`profile`): a separate execution context of the candidate's engine
  without CUDA graphs, ``context.profiler = <IProfiler subclass>`` with
  ``enqueue_emits_profile = False`` and ``context.report_to_profiler()`` after each synchronized
  run, so ``report_layer_time(layer_name, ms)`` arrives once per layer per run;
* trtexec's ``--exportProfile=FILE`` (:func:`parse_trtexec_profile`): a JSON list whose first item
  is ``{"count": N}`` followed by ``{"name", "timeMs", "averageMs", "medianMs", "percentage"}``
  per layer (times summed over the N runs; no per-run times, so no noise level).

Layer kinds, precisions and tactics come from the engine inspector's JSON
(``get_engine_information(LayerInformationFormat.JSON)`` or trtexec's ``--exportLayerInfo``),
parsed by :mod:`gptuner_core.backends.tensorrt.inspector`. ONNX origins come from the layer
``Metadata`` (``[ONNX Layer: <node>]``, one per fused node, separated by ``\\x1e``) or, failing
that, from the fused layer name (``/c1/conv/Conv + /c1/act/Relu``) resolved by
:class:`~gptuner_core.profiles.origins.OnnxOrigins`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.errors import ProfileError
from gptuner_core.profiles.records import LayerProfile
from gptuner_core.profiles.records import LayerTime


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.backends._base import BuildResult
    from gptuner_core.backends.tensorrt.inspector import EngineInfo
    from gptuner_core.profiles.origins import OnnxOrigins

_ONNX_LAYER = re.compile(r"\[ONNX Layer: ([^\]]+)\]")
_SKIP = ("Reformatting CopyNode", "[trainStation]")


def parse_trtexec_profile(text: str) -> tuple[int, dict[str, float]]:
    """``(runs, {layer name: mean ms per run})`` from trtexec ``--exportProfile`` JSON."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"trtexec profile: not valid JSON ({exc.msg} at line {exc.lineno})"
        raise ProfileError(msg) from None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "count" not in data[0]:
        msg = "trtexec profile: expected a JSON list starting with {\"count\": N} (trtexec --exportProfile)"
        raise ProfileError(msg)
    runs = int(data[0]["count"])
    out: dict[str, float] = {}
    for item in data[1:]:
        if not isinstance(item, dict) or "name" not in item:
            continue
        if "averageMs" in item:
            ms = float(item["averageMs"])
        else:
            ms = float(item.get("timeMs", 0.0)) / max(runs, 1)
        out[str(item["name"])] = out.get(str(item["name"]), 0.0) + ms
    return runs, out


def layer_origins(name: str, metadata: str, origins: OnnxOrigins | None, kind: str = "") -> tuple[str, ...]:
    """ONNX nodes of one engine layer: metadata first, then the ``" + "``-joined layer name."""
    found = _ONNX_LAYER.findall(metadata or "")
    if found:
        return tuple(dict.fromkeys(f.strip() for f in found))
    parts = [p.strip() for p in name.split(" + ") if p.strip()]
    if origins is None:
        return tuple(p for p in parts if not p.startswith(_SKIP))
    out: list[str] = []
    for p in parts:
        out += [o for o in origins.resolve(p, kind) if o not in out]
    return tuple(out)


def combine(
    times: dict[str, list[float]],
    engine: EngineInfo | None,
    *,
    source: str,
    runs: int,
    origins: OnnxOrigins | None = None,
) -> LayerProfile:
    """Per-layer run times (``name -> [ms per run]``) joined with the inspector's layers."""
    info = {la.name: la for la in (engine.layers if engine else ())}
    layers = []
    order = [la.name for la in engine.layers] if engine else []
    names = [n for n in order if n in times] + [n for n in times if n not in info]
    for name in names:
        t = times[name]
        la = info.get(name)
        kind = la.layer_type if la else ""
        layers.append(LayerTime(
            name=name, kind=kind or "layer", precision=la.precision if la else "",
            time_ms=sum(t) / len(t) if t else 0.0, run_ms=tuple(t) if len(t) > 1 else (),
            origins=layer_origins(name, la.metadata if la else "", origins, kind),
            detail=la.tactic if la else "",
        ))
    notes = []
    if engine is None:
        notes.append("no engine inspector JSON: kinds and precisions unknown")
    if runs and all(len(t) <= 1 for t in times.values()):
        notes.append("per-layer times are averages without per-run values: no noise level")
    return LayerProfile(
        backend="tensorrt", source=source, runs=runs, layers=tuple(layers),
        origin_ops=origins.ops if origins else {}, notes=tuple(notes),
    )


def from_trtexec(
    profile_json: str | Path, layer_info_json: str | Path | None = None, *, model: str | Path | None = None
) -> LayerProfile:
    """A profile from trtexec's ``--exportProfile`` (and ``--exportLayerInfo``) files."""
    from gptuner_core.backends.tensorrt.inspector import parse_engine_information
    from gptuner_core.profiles.origins import OnnxOrigins

    runs, means = parse_trtexec_profile(Path(profile_json).read_text())
    engine = parse_engine_information(Path(layer_info_json).read_text()) if layer_info_json else None
    origins = OnnxOrigins.from_model(model) if model else None
    return combine({k: [v] for k, v in means.items()}, engine, source="trtexec --exportProfile",
                   runs=runs, origins=origins)


def _profiler_class() -> type:
    import tensorrt as trt

    class LayerTimes(trt.IProfiler):
        """Collects ``report_layer_time`` calls; ``start_run`` opens a new run."""

        def __init__(self) -> None:
            trt.IProfiler.__init__(self)
            self.runs: list[dict[str, float]] = []

        def start_run(self) -> None:
            self.runs.append({})

        def report_layer_time(self, layer_name: str, ms: float) -> None:
            if not self.runs:
                self.runs.append({})
            run = self.runs[-1]
            run[layer_name] = run.get(layer_name, 0.0) + float(ms)

    return LayerTimes


def profile(
    build: BuildResult,
    feeds: dict[str, np.ndarray],
    *,
    model: str | Path | None = None,
    runs: int = 20,
    warmup: int = 3,
) -> LayerProfile:
    """``IProfiler`` run of the candidate's engine in a separate runner without CUDA graphs."""
    import tensorrt as trt

    from gptuner_core.backends.tensorrt.inspector import parse_engine_information
    from gptuner_core.backends.tensorrt.runner import TensorRTRunner
    from gptuner_core.profiles.origins import OnnxOrigins

    with TensorRTRunner(str(build.artifact), cuda_graph=False) as runner:
        runner.prepare(feeds)
        runner.time_calls(max(0, warmup))
        context = runner._context  # noqa: SLF001 - a separate context owned by this runner
        prof = _profiler_class()()
        context.profiler = prof
        context.enqueue_emits_profile = False
        for _ in range(max(1, runs)):
            prof.start_run()
            runner.time_calls(1)  # synchronizes the stream before returning
            context.report_to_profiler()
        inspector = runner._engine.create_engine_inspector()  # noqa: SLF001
        inspector.execution_context = context
        engine = parse_engine_information(inspector.get_engine_information(trt.LayerInformationFormat.JSON))
    names = list(dict.fromkeys(n for run in prof.runs for n in run))
    times = {n: [run.get(n, 0.0) for run in prof.runs] for n in names}
    origins = OnnxOrigins.from_model(model) if model else None
    return combine(times, engine, source="TensorRT IProfiler (separate context, no CUDA graph)",
                   runs=len(prof.runs), origins=origins)
