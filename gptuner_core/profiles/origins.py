"""Map runtime layers back to the nodes of the user's ONNX model they compute.

ONNX Runtime renames nodes while it optimizes: fused nodes are named after an output tensor
(``/c1/act/Relu_output_0_nchwc`` is Conv+Relu in the NCHWc layout), quantizers add suffixes
(``/c1/conv/Conv_quant``), layout passes add ``_token_N``, and Q/DQ glue is named after the tensor
it converts (``/c1/act/Relu_output_0_QuantizeLinear``). :class:`OnnxOrigins` resolves a runtime
name, op type and tensors to origin nodes:

1. the longest node name or tensor name of the source model that prefixes the runtime name (at a
   ``_`` boundary) gives the anchor node (a tensor gives its producer, or its consumers when it is
   a graph input);
2. output tensors of the runtime node that exist in the source model add their producers (a
   ``FusedGemm`` writing ``/act/Relu_output_0`` also computes ``/act/Relu``);
3. when the anchor's op is not the runtime op's core (a ``Conv`` named after the ``Relu`` it
   absorbed), the single-input chain above the anchor is walked until that op is found, and the
   nodes on the way are included (Conv+BN+Relu fusions).

Glue ops (Q/DQ, transposes, layout reorders, casts) only take the origin they touch; no walk.
Pure Python over ``onnx`` protos; no runtime needed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

GLUE_OPS = frozenset({
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "Transpose", "ReorderInput",
    "ReorderOutput", "Cast", "MemcpyToHost", "MemcpyFromHost", "Reshape", "Flatten", "Squeeze",
    "Unsqueeze", "Identity",
})
_CORE_PREFIXES = ("QLinear", "Fused", "Nhwc", "Dynamic", "Quantize")
_CORE_SUFFIXES = ("Integer", "IntegerToFloat", "NBits", "FP16", "Nchwc")
_CORE_ALIASES = {"QGemm": "Gemm", "MatMulIntegerToFloat": "MatMul", "DynamicQuantizeMatMul": "MatMul",
                 "QAttention": "Attention", "FusedConv": "Conv", "NhwcFusedConv": "Conv"}
_STRIP = re.compile(r"^fused |(_kernel_time)$")


def core_op(op: str) -> str:
    """``QLinearConv`` -> ``Conv``, ``FusedGemm`` -> ``Gemm``, ``NhwcMaxPool`` -> ``MaxPool``."""
    if op in _CORE_ALIASES:
        return _CORE_ALIASES[op]
    out = op
    for p in _CORE_PREFIXES:
        if out.startswith(p) and len(out) > len(p):
            out = out[len(p):]
    for s in _CORE_SUFFIXES:
        if out.endswith(s) and len(out) > len(s):
            out = out[: -len(s)]
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class _Node:
    name: str
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


class OnnxOrigins:
    """Origin resolver over the source model's graph (node names, tensors, producers)."""

    def __init__(self, nodes: Iterable[_Node], graph_inputs: Iterable[str], initializers: Iterable[str]) -> None:
        self.nodes = {n.name: n for n in nodes if n.name}
        self.order = {name: i for i, name in enumerate(self.nodes)}
        self.producer: dict[str, str] = {}
        self.consumers: dict[str, list[str]] = {}
        for n in self.nodes.values():
            for t in n.outputs:
                self.producer[t] = n.name
            for t in n.inputs:
                self.consumers.setdefault(t, []).append(n.name)
        self.graph_inputs = set(graph_inputs)
        self.initializers = set(initializers)
        self._prefixes = sorted(set(self.nodes) | set(self.producer) | self.graph_inputs, key=len, reverse=True)

    @classmethod
    def from_model(cls, path: str | Path) -> OnnxOrigins:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
        return cls.from_graph(model.graph)

    @classmethod
    def from_graph(cls, graph: object) -> OnnxOrigins:
        nodes = [
            _Node(name=n.name, op=n.op_type, inputs=tuple(n.input), outputs=tuple(n.output))
            for n in graph.node  # type: ignore[attr-defined]
        ]
        return cls(
            nodes,
            [i.name for i in graph.input],  # type: ignore[attr-defined]
            [i.name for i in graph.initializer],  # type: ignore[attr-defined]
        )

    @property
    def ops(self) -> dict[str, str]:
        return {n.name: n.op for n in self.nodes.values()}

    def _nodes_of_tensor(self, tensor: str) -> list[str]:
        if tensor in self.producer:
            return [self.producer[tensor]]
        if tensor in self.graph_inputs:
            return list(self.consumers.get(tensor, []))
        return []

    def _anchor(self, text: str) -> list[str]:
        for p in self._prefixes:
            if text == p or (text.startswith(p) and text[len(p)] == "_"):
                return [p] if p in self.nodes else self._nodes_of_tensor(p)
        return []

    def _walk_to(self, start: str, want: str, limit: int = 6) -> list[str]:
        path, cur = [], start
        for _ in range(limit):
            node = self.nodes[cur]
            data = [t for t in node.inputs if t and t not in self.initializers]
            if len(data) != 1 or data[0] not in self.producer:
                return []
            cur = self.producer[data[0]]
            path.append(cur)
            if core_op(self.nodes[cur].op) == want:
                return path
        return []

    def resolve(
        self, name: str, op: str, inputs: Iterable[str] = (), outputs: Iterable[str] = ()
    ) -> tuple[str, ...]:
        """Origin node names (in source-graph order) of one runtime node."""
        text = _STRIP.sub("", name)
        found = self._anchor(text)
        glue = op in GLUE_OPS
        if not glue:
            for t in outputs:
                if t in self.producer:
                    found.append(self.producer[t])
        if not found:  # unnamed layout / glue nodes: the tensors they touch
            for t in list(outputs) + list(inputs):
                hit = self._anchor(t)
                if hit:
                    found = hit
                    break
        if found and not glue:
            want = core_op(op)
            if all(core_op(self.nodes[n].op) != want for n in found):
                for n in list(found):
                    found += self._walk_to(n, want)
        unique = sorted(set(found), key=lambda n: self.order.get(n, 0))
        return tuple(unique)
