"""Parse the engine inspector's JSON (``LayerInformationFormat.JSON``) into small records.

Two schema generations are accepted (reference §6):

* TensorRT 10.x: ``{"Layers": [...], "Bindings": ["in", "out"]}``; layer tensors carry one
  ``"Format/Datatype"`` string (``"Row major linear FP32"``).
* TensorRT 11.x: ``"Bindings"`` is replaced by ``"I/O Tensors"`` objects (``Name``, ``IOMode``,
  ``DataType``, ``Dimensions``, ``Location``, ``IsShapeInferenceIO``, ``ProfileInfo``), and the
  format and data type of layer tensors are separate fields (``"Format"``, ``"DataType"``).

With ``ProfilingVerbosity.LAYER_NAMES_ONLY`` layers are plain strings; they parse to records with
only a name. Pure Python; no TensorRT needed.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gptuner_core.errors import BackendError


# Longest/most specific spellings first: "BFloat16" before "Float", "FP8" before "FP".
_PRECISIONS: tuple[tuple[str, str], ...] = (
    ("bfloat16", "BF16"),
    ("bf16", "BF16"),
    ("fp8", "FP8"),
    ("e4m3", "FP8"),
    ("fp4", "FP4"),
    ("e2m1", "FP4"),
    ("fp16", "FP16"),
    ("half", "FP16"),
    ("fp32", "FP32"),
    ("float", "FP32"),
    ("uint8", "UINT8"),
    ("int64", "INT64"),
    ("int32", "INT32"),
    ("int8", "INT8"),
    ("int4", "INT4"),
    ("bool", "BOOL"),
)


def normalize_precision(text: str | None) -> str:
    """``"Half"``/``"Row major linear FP16 format"`` -> ``"FP16"``; ``""`` when unknown."""
    lowered = str(text or "").lower()
    for token, name in _PRECISIONS:
        if token in lowered:
            return name
    return ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorInfo:
    name: str
    dtype: str = ""
    format: str = ""
    dims: tuple[int, ...] = ()
    location: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerInfo:
    """One engine layer. ``precision`` is the data type of its first output (or input)."""

    name: str
    layer_type: str = ""
    precision: str = ""
    tactic: str = ""
    inputs: tuple[TensorInfo, ...] = ()
    outputs: tuple[TensorInfo, ...] = ()
    metadata: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class IOTensor:
    name: str
    mode: str = ""
    dtype: str = ""
    dims: tuple[int, ...] = ()
    location: str = ""
    shape_inference: bool = False
    profiles: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineInfo:
    layers: tuple[LayerInfo, ...] = ()
    io_tensors: tuple[IOTensor, ...] = ()
    schema: str = ""  # "trt11" ("I/O Tensors"), "trt10" ("Bindings") or "" (neither)
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Counts by precision and by layer type, for the dashboard."""
        by_precision: dict[str, int] = {}
        by_type: dict[str, int] = {}
        for layer in self.layers:
            p = layer.precision or "unknown"
            by_precision[p] = by_precision.get(p, 0) + 1
            t = layer.layer_type or "unknown"
            by_type[t] = by_type.get(t, 0) + 1
        return {
            "num_layers": len(self.layers),
            "by_precision": dict(sorted(by_precision.items())),
            "by_type": dict(sorted(by_type.items())),
            "schema": self.schema,
        }


def _dims(value: Any) -> tuple[int, ...]:
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            try:
                out.append(int(v))
            except (TypeError, ValueError):
                out.append(-1)
        return tuple(out)
    return ()


def _tensor(obj: Any) -> TensorInfo:
    if isinstance(obj, str):
        return TensorInfo(name=obj)
    if not isinstance(obj, dict):
        return TensorInfo(name=str(obj))
    combined = str(obj.get("Format/Datatype", ""))
    dtype = str(obj.get("DataType", "")) or normalize_precision(combined)
    fmt = str(obj.get("Format", "")) or combined
    return TensorInfo(
        name=str(obj.get("Name", "")),
        dtype=dtype,
        format=fmt,
        dims=_dims(obj.get("Dimensions")),
        location=str(obj.get("Location", "")),
    )


def parse_layer(obj: Any) -> LayerInfo:
    """One layer from its JSON value (a dict with DETAILED verbosity, or a name string)."""
    if isinstance(obj, str):
        return LayerInfo(name=obj)
    if not isinstance(obj, dict):
        msg = f"engine inspector: expected a layer object or name (got {type(obj).__name__})"
        raise BackendError(msg)
    inputs = tuple(_tensor(t) for t in obj.get("Inputs", []) or [])
    outputs = tuple(_tensor(t) for t in obj.get("Outputs", []) or [])
    precision = ""
    for t in outputs + inputs:
        precision = normalize_precision(t.dtype) or normalize_precision(t.format)
        if precision:
            break
    tactic = obj.get("TacticName") or obj.get("Tactic") or ""
    if not tactic and obj.get("TacticValue") is not None:
        tactic = str(obj.get("TacticValue"))
    return LayerInfo(
        name=str(obj.get("Name", "")),
        layer_type=str(obj.get("LayerType", "")),
        precision=precision,
        tactic=str(tactic),
        inputs=inputs,
        outputs=outputs,
        metadata=str(obj.get("Metadata", "")),
    )


def _loads(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"engine inspector {what}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        raise BackendError(msg) from None


def parse_layer_information(text: str) -> LayerInfo:
    """``inspector.get_layer_information(i, LayerInformationFormat.JSON)`` -> :class:`LayerInfo`."""
    data = _loads(text, "layer information")
    if isinstance(data, dict) and "Layers" in data and isinstance(data["Layers"], list):
        layers = data["Layers"]
        if len(layers) != 1:
            msg = f"engine inspector layer information: expected 1 layer (got {len(layers)})"
            raise BackendError(msg)
        data = layers[0]
    return parse_layer(data)


def _io_tensor(obj: Any) -> IOTensor:
    if isinstance(obj, str):
        return IOTensor(name=obj)
    if not isinstance(obj, dict):
        return IOTensor(name=str(obj))
    profiles = tuple(
        {
            "min": list(_dims(p.get("MinShape"))),
            "opt": list(_dims(p.get("OptShape"))),
            "max": list(_dims(p.get("MaxShape"))),
            "format": str(p.get("Format", "")),
        }
        for p in obj.get("ProfileInfo", []) or []
        if isinstance(p, dict)
    )
    return IOTensor(
        name=str(obj.get("Name", "")),
        mode=str(obj.get("IOMode", "")),
        dtype=str(obj.get("DataType", "")),
        dims=_dims(obj.get("Dimensions")),
        location=str(obj.get("Location", "")),
        shape_inference=bool(obj.get("IsShapeInferenceIO", False)),
        profiles=profiles,
    )


def parse_engine_information(text: str) -> EngineInfo:
    """``inspector.get_engine_information(LayerInformationFormat.JSON)`` -> :class:`EngineInfo`."""
    data = _loads(text, "engine information")
    if not isinstance(data, dict):
        msg = f"engine inspector engine information: expected a JSON object (got {type(data).__name__})"
        raise BackendError(msg)
    layers_raw = data.get("Layers", [])
    if not isinstance(layers_raw, list):
        msg = f"engine inspector engine information: 'Layers' must be a list (got {type(layers_raw).__name__})"
        raise BackendError(msg)
    if "I/O Tensors" in data:
        schema, io_raw = "trt11", data.get("I/O Tensors") or []
    elif "Bindings" in data:
        schema, io_raw = "trt10", data.get("Bindings") or []
    else:
        schema, io_raw = "", []
    extra = {k: v for k, v in data.items() if k not in ("Layers", "I/O Tensors", "Bindings")}
    return EngineInfo(
        layers=tuple(parse_layer(x) for x in layers_raw),
        io_tensors=tuple(_io_tensor(x) for x in io_raw),
        schema=schema,
        extra=extra,
    )


def layers_from_parts(layer_texts: list[str]) -> EngineInfo:
    """Engine info assembled from per-layer JSON strings (one ``get_layer_information`` each)."""
    return EngineInfo(layers=tuple(parse_layer_information(t) for t in layer_texts))
