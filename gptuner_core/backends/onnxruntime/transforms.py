"""Precision transforms (INT8 quantization, fp16) applied to the model before the session exists.

Transformed models are cached under a directory shared by the study's candidates, keyed by the
hash of (source model sha256, transform parameters, calibration data sha256), so candidates that
differ only in session options reuse one transform.

Normalization (reported in the effective route, never an error): when ``-quant:mode=off`` every
``-quant:*`` knob is irrelevant and reset to its default; in dynamic mode the activation type and
the calibration method are reset (``quantize_dynamic`` has neither). Rejections (build failure):
``-fp16:convert=on`` together with a quantization mode, static quantization without calibration
inputs, calibration inputs that do not match the model's inputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends.onnxruntime import knobs as K
from gptuner_core.backends.onnxruntime.calibration import CALIBRATION_CHUNK  # noqa: F401 - re-export
from gptuner_core.backends.onnxruntime.calibration import MAX_CALIBRATION_ROWS  # noqa: F401
from gptuner_core.backends.onnxruntime.calibration import calibration_sha
from gptuner_core.backends.onnxruntime.calibration import check_calibration
from gptuner_core.backends.onnxruntime.calibration import reader
from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    import numpy as np
    import onnx


_OP_TYPES = {"compute": ["Conv", "MatMul", "Gemm"], "gemm": ["MatMul", "Gemm"], "all": None}
_QTYPES = {"uint8": "QUInt8", "int8": "QInt8", "uint16": "QUInt16", "int4": "QInt4"}
_CALIB = {"minmax": "MinMax", "entropy": "Entropy", "percentile": "Percentile"}
_QUANT_KNOBS = (
    K.QUANT_ACT,
    K.QUANT_WEIGHT,
    K.QUANT_PER_CHANNEL,
    K.QUANT_REDUCE_RANGE,
    K.QUANT_CALIBRATION,
    K.QUANT_OP_TYPES,
    K.QUANT_PREPROCESS,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TransformParams:
    """What the model transform does; ``excluded_nodes`` are Q/DQ insertion points left fp32."""

    mode: str = "off"
    activation_type: str = "uint8"
    weight_type: str = "int8"
    per_channel: bool = False
    reduce_range: bool = False
    calibration: str = "minmax"
    op_types: str = "compute"
    excluded_nodes: tuple[str, ...] = ()
    fp16: bool = False
    preprocess: bool = True

    @property
    def identity(self) -> bool:
        return self.mode == "off" and not self.fp16

    @property
    def static(self) -> bool:
        return self.mode in ("qdq", "qoperator")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["excluded_nodes"] = list(self.excluded_nodes)
        return data


def normalize(
    values: dict[str, str], defaults: dict[str, str]
) -> tuple[dict[str, str], list[str]]:
    """Reset precision knobs that have no effect; return (new values, notes). Rejects fp16+int8."""
    out = dict(values)
    notes: list[str] = []
    mode = out.get(K.QUANT_MODE, "off")
    if out.get(K.FP16, "off") == "on" and mode != "off":
        msg = (
            f"route combines {K.FP16}=on with {K.QUANT_MODE}={mode}: a model is either converted to "
            f"float16 or quantized to integers (expected {K.FP16}=off or {K.QUANT_MODE}=off)"
        )
        raise BackendError(msg)

    def reset(name: str, why: str) -> None:
        if out.get(name, defaults[name]) != defaults[name]:
            notes.append(f"{name}={out[name]} -> {defaults[name]} ({why})")
        out[name] = defaults[name]

    if mode == "off":
        for name in (*_QUANT_KNOBS, *(n for n in out if n.startswith(K.QUANT_NODE_PREFIX))):
            reset(name, f"no effect with {K.QUANT_MODE}=off")
    elif mode == "dynamic":
        reset(K.QUANT_ACT, "dynamic quantization always uses uint8 activations")
        reset(K.QUANT_CALIBRATION, "dynamic quantization does not calibrate")
    return out, notes


def params_from_values(values: dict[str, str]) -> TransformParams:
    excluded = tuple(
        name[len(K.QUANT_NODE_PREFIX) :]
        for name, v in values.items()
        if name.startswith(K.QUANT_NODE_PREFIX) and v == "off"
    )
    return TransformParams(
        mode=values.get(K.QUANT_MODE, "off"),
        activation_type=values.get(K.QUANT_ACT, "uint8"),
        weight_type=values.get(K.QUANT_WEIGHT, "int8"),
        per_channel=values.get(K.QUANT_PER_CHANNEL, "off") == "on",
        reduce_range=values.get(K.QUANT_REDUCE_RANGE, "off") == "on",
        calibration=values.get(K.QUANT_CALIBRATION, "minmax"),
        op_types=values.get(K.QUANT_OP_TYPES, "compute"),
        excluded_nodes=excluded,
        fp16=values.get(K.FP16, "off") == "on",
        preprocess=values.get(K.QUANT_PREPROCESS, "on") == "on",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TransformOutcome:
    """The transformed model file and what happened (``cached``: reused from an earlier candidate)."""

    path: Path
    cache_key: str
    cached: bool
    seconds: float
    quantized_nodes: tuple[str, ...] = ()
    op_counts: dict[str, int] = field(default_factory=dict)


def cache_key(model_sha: str, params: TransformParams, calib_sha: str) -> str:
    text = json.dumps(
        {
            "model": model_sha,
            "params": params.to_json(),
            "calibration": calib_sha if params.static else "",
        },
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _quantize(
    src: Path, dst: Path, model: onnx.ModelProto, params: TransformParams, calibration: Any,
    *, model_sha: str = "", cache_dir: Path | None = None,
) -> None:
    from onnxruntime import quantization as q

    from gptuner_core.backends.onnxruntime import preprocess as P
    from gptuner_core.backends.onnxruntime.model import iter_graphs

    if params.preprocess and cache_dir is not None:
        src = P.preprocessed(src, model_sha, cache_dir)
        P.check_excluded_nodes(src, params.excluded_nodes)
    op_types = _OP_TYPES[params.op_types]
    weight = getattr(q.QuantType, _QTYPES[params.weight_type])
    # nodes inside If/Loop bodies are insertion points too; ORT skips them unless asked
    extra = {"EnableSubgraph": True} if sum(1 for _ in iter_graphs(model.graph)) > 1 else {}
    if params.mode == "dynamic":
        # quantize_dynamic first rewrites Gemm as MatMul + Add, renaming the node
        # '<name>_MatMul', so an exclusion by the original name alone would be ignored.
        excluded = [n for name in params.excluded_nodes for n in (name, f"{name}_MatMul")]
        q.quantize_dynamic(
            src,
            dst,
            op_types_to_quantize=op_types,
            per_channel=params.per_channel,
            reduce_range=params.reduce_range,
            weight_type=weight,
            nodes_to_exclude=excluded,
            extra_options=extra,
        )
        return
    rows, axes = check_calibration(model, calibration)
    q.quantize_static(
        src,
        dst,
        reader(model, rows, axes),
        quant_format=q.QuantFormat.QDQ if params.mode == "qdq" else q.QuantFormat.QOperator,
        op_types_to_quantize=op_types,
        per_channel=params.per_channel,
        reduce_range=params.reduce_range,
        activation_type=getattr(q.QuantType, _QTYPES[params.activation_type]),
        weight_type=weight,
        nodes_to_exclude=list(params.excluded_nodes),
        calibrate_method=getattr(q.CalibrationMethod, _CALIB[params.calibration]),
        extra_options=extra,
    )


def _fp16(model_path: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    # by path: external data files are resolved beside the model
    converted = convert_float_to_float16(onnx.load(str(model_path)), keep_io_types=True)
    onnx.save(converted, str(dst))


def _source_name(name: str) -> str:
    """The original node name of a quantizer-made node (``/fc/Gemm_MatMul_quant`` -> ``/fc/Gemm``)."""
    for suffix in ("_quant", "_MatMul"):
        name = name.removesuffix(suffix)
    return name


def quantized_nodes(transformed: onnx.ModelProto) -> tuple[str, ...]:
    """Original names of the nodes that run in integer: QDQ-wrapped Conv/MatMul/Gemm, or
    QLinear*/QGemm/*Integer nodes made by QOperator and dynamic quantization."""
    from gptuner_core.backends.onnxruntime.model import iter_graphs
    from gptuner_core.backends.onnxruntime.model import iter_nodes

    producers = {o: n.op_type for n in iter_nodes(transformed) for o in n.output}
    inits = {i.name for g in iter_graphs(transformed.graph) for i in g.initializer}
    names = []
    for n in iter_nodes(transformed):
        if n.op_type in ("Conv", "MatMul", "Gemm"):
            fed = [producers.get(i) for i in n.input[:2] if i and i not in inits]
            if "DequantizeLinear" in fed:
                names.append(n.name)
        elif n.op_type.startswith("QLinear") or n.op_type in (
            "QGemm",
            "ConvInteger",
            "MatMulInteger",
        ):
            if n.op_type not in ("QLinearAdd", "QLinearMul"):
                names.append(_source_name(n.name))
    return tuple(names)


def op_counts(model: onnx.ModelProto) -> dict[str, int]:
    from gptuner_core.backends.onnxruntime.model import iter_nodes

    counts: dict[str, int] = {}
    for n in iter_nodes(model):
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return dict(sorted(counts.items()))


def _subgraph_hint(model: onnx.ModelProto, params: TransformParams) -> str:
    """Why static quantization fails on models whose compute sits in If/Loop subgraphs."""
    from gptuner_core.backends.onnxruntime.model import COMPUTE_OP_TYPES

    if not params.static:
        return ""
    top = {n.op_type for n in model.graph.node}
    if top & set(COMPUTE_OP_TYPES) or not top & {"If", "Loop", "Scan"}:
        return ""
    return (
        "; the model's Conv/MatMul/Gemm nodes are all inside If/Loop subgraphs, which ONNX "
        "Runtime's static (QDQ/QOperator) quantizer does not handle: use -quant:mode=dynamic"
    )


def apply_transform(
    model_path: Path,
    model: onnx.ModelProto,
    model_sha: str,
    params: TransformParams,
    cache_dir: Path,
    calibration: dict[str, np.ndarray] | None,
) -> TransformOutcome:
    """Transform ``model_path`` per ``params`` (or reuse the cached result)."""
    import onnx

    if params.identity:
        return TransformOutcome(
            path=model_path, cache_key="", cached=False, seconds=0.0, op_counts=op_counts(model)
        )
    key = cache_key(model_sha, params, calibration_sha(calibration) if params.static else "")
    dst = cache_dir / f"{key[:24]}.onnx"
    meta_path = dst.with_suffix(".json")
    if dst.is_file() and meta_path.is_file():
        meta = json.loads(meta_path.read_text())
        return TransformOutcome(
            path=dst,
            cache_key=key,
            cached=True,
            seconds=0.0,
            quantized_nodes=tuple(meta["quantized_nodes"]),
            op_counts=meta["op_counts"],
        )
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f"{key[:24]}.{os.getpid()}.tmp.onnx"
    t0 = time.perf_counter()
    try:
        if params.fp16:
            _fp16(model_path, tmp)
        else:
            _quantize(
                model_path, tmp, model, params, calibration, model_sha=model_sha,
                cache_dir=cache_dir,
            )
    except BackendError:
        tmp.unlink(missing_ok=True)
        raise
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        first = (str(exc).strip().splitlines() or [""])[0][:400]
        what = "fp16 conversion" if params.fp16 else f"{params.mode} quantization"
        msg = f"{what} failed ({type(exc).__name__}: {first}) with parameters {params.to_json()}"
        raise BackendError(msg + _subgraph_hint(model, params)) from None
    seconds = time.perf_counter() - t0
    transformed = onnx.load(str(tmp), load_external_data=False)
    outcome = TransformOutcome(
        path=dst,
        cache_key=key,
        cached=False,
        seconds=seconds,
        quantized_nodes=quantized_nodes(transformed),
        op_counts=op_counts(transformed),
    )
    if not params.fp16 and not outcome.quantized_nodes:
        tmp.unlink(missing_ok=True)
        msg = (
            f"{params.mode} quantization quantized no node (op types {params.op_types}, "
            f"excluded {list(params.excluded_nodes)}): expected at least one Q/DQ insertion point"
        )
        raise BackendError(msg + _subgraph_hint(model, params))
    os.replace(tmp, dst)
    tmp_meta = meta_path.with_suffix(f".{os.getpid()}.tmp")
    tmp_meta.write_text(
        json.dumps(
            {
                "params": params.to_json(),
                "quantized_nodes": list(outcome.quantized_nodes),
                "op_counts": outcome.op_counts,
                "seconds": seconds,
            }
        )
    )
    os.replace(tmp_meta, meta_path)
    return outcome
