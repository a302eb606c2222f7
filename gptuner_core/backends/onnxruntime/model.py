"""Loading and checking ONNX model files: every failure is a :class:`BackendError`."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    import onnx

#: Op types whose nodes are Q/DQ insertion points (one on/off knob each).
COMPUTE_OP_TYPES = ("Conv", "MatMul", "Gemm")
#: Node names usable inside a ``-name=value`` route token.
_SAFE_NAME = re.compile(r"^[^\s=\[\]|]+$")

_ELEM_TYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    16: "bfloat16",
}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_model(path: Path | str, *, check: bool = True) -> onnx.ModelProto:
    """Parse and check an ONNX file; raise BackendError saying what is wrong with it.

    ``check=False`` skips ``onnx.checker`` (for our own transformed models: ORT's fp16 converter
    emits valid graphs that are not topologically sorted, which ORT accepts and the checker not).
    """
    import onnx

    p = Path(path)
    if not p.is_file():
        msg = f"model '{p}': file not found (expected an .onnx file)"
        raise BackendError(msg)
    data = p.read_bytes()
    if not data:
        msg = f"model '{p}': file is empty (expected an ONNX protobuf)"
        raise BackendError(msg)
    try:
        model = onnx.load_from_string(data)
    except Exception as exc:  # protobuf raises DecodeError, onnx raises others
        msg = (
            f"model '{p}': not a valid ONNX file ({type(exc).__name__}: {exc}); "
            "expected an ONNX ModelProto (truncated or not ONNX?)"
        )
        raise BackendError(msg) from None
    if not model.graph.node or not model.graph.output:
        msg = (
            f"model '{p}': not a usable ONNX model (got {len(model.graph.node)} nodes and "
            f"{len(model.graph.output)} outputs; expected at least one of each; truncated or not ONNX?)"
        )
        raise BackendError(msg)
    try:
        if check:
            onnx.checker.check_model(model)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"model '{p}': ONNX checker rejected it ({first})"
        raise BackendError(msg) from None
    if not graph_inputs(model):
        msg = f"model '{p}': the graph has no inputs (expected at least one non-initializer input)"
        raise BackendError(msg)
    return model


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _spec(value: onnx.ValueInfoProto) -> TensorSpec:
    tt = value.type.tensor_type
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return TensorSpec(
        name=value.name, dtype=_ELEM_TYPES.get(tt.elem_type, str(tt.elem_type)), shape=tuple(dims)
    )


def input_specs(model: onnx.ModelProto) -> list[TensorSpec]:
    return [_spec(v) for v in graph_inputs(model)]


def output_specs(model: onnx.ModelProto) -> list[TensorSpec]:
    return [_spec(v) for v in model.graph.output]


def quantizable_nodes(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """``(node name, op type)`` of Conv/MatMul/Gemm nodes whose names fit in a route token."""
    return [
        (n.name, n.op_type)
        for n in model.graph.node
        if n.op_type in COMPUTE_OP_TYPES and n.name and _SAFE_NAME.match(n.name)
    ]


def op_types(model: onnx.ModelProto) -> set[str]:
    return {n.op_type for n in model.graph.node}
