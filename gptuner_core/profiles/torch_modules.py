"""Map torch kernels back to the modules of the user's ``nn.Module`` they compute.

Inductor's generated code names, before each kernel call, the FX nodes of Dynamo's graph the
kernel computes (``# Topologically Sorted Source Nodes: [input_2, input_3, input_4]``). Those
names are Dynamo's (after the variable a value was assigned to: ``input_N`` inside an
``nn.Sequential``), and the list is loose: an extern convolution also lists the nodes fused into
its input buffer, and after freezing a oneDNN Conv+ReLU lists only the ReLU. Aligning two routes
by those names would pair the first Conv of one route with the second of the other.

:class:`ModuleTable` holds Dynamo's graph of the model (node name -> module path from
``nn_module_stack``, target, data inputs) and :meth:`ModuleTable.resolve` turns a kernel and its
listed nodes into the modules it computes:

1. the listed nodes of the kernel's family (convolution; linear/matmul): the last one in
   topological order is the kernel's own node;
2. otherwise the nearest node of that family up the single-data-input chain from the listed
   nodes (a fused Conv+BN+ReLU listed by its ReLU), the nodes on the way included;
3. a kernel of no known family keeps its listed nodes.

Origins are module paths (``features.0``); :attr:`ModuleTable.ops` gives each its class
(``Conv2d``), or the function's name for an op outside any submodule. :func:`trace_table`
builds the table by tracing the model with Dynamo and a backend that only records the graph.
"""

from __future__ import annotations

from typing import Any

from gptuner_core.records.graph import SourceNode


__all__ = ["ModuleTable", "SourceNode", "family", "trace_table"]


_CONV = ("conv",)
_LINEAR = frozenset({"linear", "addmm", "mm", "matmul", "bmm", "baddbmm", "mkl_linear",
                     "linear_pointwise", "__matmul__"})


def family(op: str) -> str:
    """``aten::convolution``/``mkldnn::_convolution_pointwise``/``conv2d`` -> ``conv``;
    ``aten::addmm``/``mkl::_mkl_linear``/``linear`` -> ``linear``; others their own name."""
    tail = op.rsplit("::", 1)[-1].rsplit(".", 1)[-1].lstrip("_").lower()
    if any(tail.startswith(p) or f"_{p}" in tail for p in _CONV):
        return "conv"
    if tail in _LINEAR:
        return "linear"
    return tail


class ModuleTable:
    """Dynamo's call nodes of a model, in graph order."""

    def __init__(self, nodes: list[SourceNode]) -> None:
        self.nodes: dict[str, SourceNode] = {}
        for n in nodes:
            self.nodes.setdefault(n.name, n)

    @classmethod
    def from_graphs(cls, graphs: list[Any]) -> ModuleTable:
        """From ``torch.fx.GraphModule`` objects (Dynamo's graphs, in compile order)."""
        from gptuner_core.backends.torch_inductor.graph_nodes import source_nodes

        return cls([n for gm in graphs for n in source_nodes(gm)])

    @property
    def ops(self) -> dict[str, str]:
        """Origin (module path) -> op (module class), in graph order."""
        out: dict[str, str] = {}
        for n in self.nodes.values():
            out.setdefault(n.origin, n.op)
        return out

    def _walk_to(self, start: str, want: str, limit: int = 6) -> list[str]:
        path, cur = [], start
        for _ in range(limit):
            node = self.nodes.get(cur)
            if node is None or len(node.inputs) != 1:
                return []
            cur = node.inputs[0]
            path.append(cur)
            if cur in self.nodes and family(self.nodes[cur].target) == want:
                return path
        return []

    def resolve(self, kernel: str, listed: tuple[str, ...]) -> tuple[str, ...]:
        """The module paths (graph order) kernel ``kernel`` computes, from its listed nodes."""
        known = [n for n in listed if n in self.nodes]
        if not known:
            return ()
        want = family(kernel)
        own = [n for n in known if family(self.nodes[n].target) == want]
        if own:
            chosen = [own[-1]]
        elif want in ("conv", "linear"):
            chosen = []
            for n in reversed(known):
                path = self._walk_to(n, want)
                if path:
                    chosen = [n, *path]
                    break
            chosen = chosen or known
        else:
            chosen = known
        order = {name: i for i, name in enumerate(self.nodes)}
        origins = [self.nodes[n].origin for n in sorted(set(chosen), key=order.__getitem__)]
        return tuple(dict.fromkeys(origins))


def trace_table(module: Any, inputs: tuple[Any, ...]) -> ModuleTable:
    """Dynamo's graph(s) of ``module`` on ``inputs`` as a :class:`ModuleTable` (no compile:
    the backend records the graph and runs it as traced)."""
    import torch

    graphs: list[Any] = []

    def record(gm: Any, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    with torch.no_grad():
        torch.compile(module, backend=record, dynamic=False)(*inputs)
    return ModuleTable.from_graphs(graphs)
