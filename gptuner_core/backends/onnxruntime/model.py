"""Loading and checking ONNX model files: every failure is a :class:`BackendError`."""

from __future__ import annotations

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

#: dim_param spellings that mean "unknown", not a symbol shared between dims.
_ANONYMOUS = ("", "?", "-1", "None")

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
    """sha256 of the model file, and of its external data files when it has some."""
    from gptuner_core.fingerprint import model_sha256

    return model_sha256(model_files(path))


def load_model(path: Path | str, *, check: bool = True) -> onnx.ModelProto:
    """Parse and check an ONNX file by path; raise BackendError saying what is wrong with it.

    The graph is read without its external data (weights stored beside the ``.onnx`` file are
    not needed to list knobs and inputs), and ``onnx.checker`` runs on the *path*, so data files
    are resolved relative to the model's folder from any working directory.

    ``check=False`` skips ``onnx.checker`` (for our own transformed models: ORT's fp16 converter
    emits valid graphs that are not topologically sorted, which ORT accepts and the checker not).
    """
    import onnx

    p = Path(path)
    if not p.is_file():
        msg = f"model '{p}': file not found (expected an .onnx file)"
        raise BackendError(msg)
    if p.stat().st_size == 0:
        msg = f"model '{p}': file is empty (expected an ONNX protobuf)"
        raise BackendError(msg)
    try:
        model = onnx.load(str(p), load_external_data=False)
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
    missing = [f for f in external_data_files(p, model) if not f.is_file()]
    if missing:
        msg = (
            f"model '{p}': its weights are stored in external data file(s) that do not exist: "
            f"{[str(f) for f in missing]} (expected beside the model, as its external_data "
            "locations say)"
        )
        raise BackendError(msg)
    try:
        if check:
            onnx.checker.check_model(str(p))
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        msg = f"model '{p}': ONNX checker rejected it ({first})"
        raise BackendError(msg) from None
    if not graph_inputs(model):
        msg = f"model '{p}': the graph has no inputs (expected at least one non-initializer input)"
        raise BackendError(msg)
    return model


def iter_graphs(graph: onnx.GraphProto):  # noqa: ANN201 - Iterator[GraphProto]
    """``graph`` and every subgraph inside it (``If`` branches, ``Loop``/``Scan`` bodies)."""
    import onnx

    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from iter_graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from iter_graphs(g)


def iter_nodes(model: onnx.ModelProto):  # noqa: ANN201 - Iterator[NodeProto]
    """Every node of the model, subgraph nodes included, in graph order."""
    for graph in iter_graphs(model.graph):
        yield from graph.node


def _tensors(model: onnx.ModelProto):  # noqa: ANN202 - Iterator[TensorProto]
    import onnx

    for graph in iter_graphs(model.graph):
        yield from graph.initializer
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.TENSOR:
                    yield attr.t
                elif attr.type == onnx.AttributeProto.TENSORS:
                    yield from attr.tensors


def external_data_files(path: Path | str, model: onnx.ModelProto | None = None) -> list[Path]:
    """The external data files the model's tensors point to (sorted, resolved beside it)."""
    import onnx

    p = Path(path)
    if model is None:
        model = onnx.load(str(p), load_external_data=False)
    locations = set()
    for tensor in _tensors(model):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            for entry in tensor.external_data:
                if entry.key == "location":
                    locations.add(entry.value)
    return [p.parent / loc for loc in sorted(locations)]


def model_files(path: Path | str) -> list[Path]:
    """The ``.onnx`` file followed by its external data files."""
    p = Path(path)
    return [p, *external_data_files(p)]


def type_text(tp: onnx.TypeProto) -> str:
    """``tensor(float)``, ``seq(map(int64,tensor(float)))``, ``optional(...)``."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        return f"tensor({_ELEM_TYPES.get(tp.tensor_type.elem_type, tp.tensor_type.elem_type)})"
    if kind == "sequence_type":
        return f"seq({type_text(tp.sequence_type.elem_type)})"
    if kind == "map_type":
        key = _ELEM_TYPES.get(tp.map_type.key_type, tp.map_type.key_type)
        return f"map({key},{type_text(tp.map_type.value_type)})"
    if kind == "optional_type":
        return f"optional({type_text(tp.optional_type.elem_type)})"
    return str(kind)


def check_outputs(model: onnx.ModelProto, where: str) -> None:
    """Refuse outputs that are not tensors (ZipMap's sequence of maps, sequences, optionals)."""
    for out in model.graph.output:
        kind = out.type.WhichOneof("value")
        if kind != "tensor_type":
            msg = (
                f"model '{where}': output '{out.name}' has an unsupported output type "
                f"{type_text(out.type)}; gptuner compares tensor outputs only (expected "
                "tensor(...); sklearn models: convert with skl2onnx options={id(model): "
                "{'zipmap': False}} so the probabilities are a tensor)"
            )
            raise BackendError(msg)


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {i.name for i in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def _spec(value: onnx.ValueInfoProto) -> TensorSpec:
    tt = value.type.tensor_type
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value") and d.dim_value >= 0:
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param") and d.dim_param.strip() not in _ANONYMOUS:
            dims.append(d.dim_param)
        else:  # -1 (paddle2onnx), '?', '' or no value: a dynamic dim no other dim shares
            dims.append(None)
    return TensorSpec(
        name=value.name, dtype=_ELEM_TYPES.get(tt.elem_type, str(tt.elem_type)), shape=tuple(dims)
    )


def input_specs(model: onnx.ModelProto) -> list[TensorSpec]:
    return [_spec(v) for v in graph_inputs(model)]


def output_specs(model: onnx.ModelProto) -> list[TensorSpec]:
    return [_spec(v) for v in model.graph.output]


def quantizable_nodes(model: onnx.ModelProto) -> list[tuple[str, str]]:
    """``(node name, op type)`` of Conv/MatMul/Gemm nodes whose names fit in a route token,
    nodes inside ``If``/``Loop`` subgraphs included."""
    return [
        (n.name, n.op_type)
        for n in iter_nodes(model)
        if n.op_type in COMPUTE_OP_TYPES and n.name and _SAFE_NAME.match(n.name)
    ]


def op_types(model: onnx.ModelProto) -> set[str]:
    return {n.op_type for n in iter_nodes(model)}
