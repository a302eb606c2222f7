"""The call nodes of a Dynamo graph (``torch.fx.GraphModule``) as :class:`SourceNode` records:
the names Inductor's generated code lists before each kernel, with the module each came from.

The build keeps them for the graph it hands to Inductor (``CompiledModel.graph_nodes``), so a
profile maps kernels to modules without tracing the model again.
"""

from __future__ import annotations

import re
from typing import Any

from gptuner_core.records.graph import SourceNode


_SELF = re.compile(r"^L\['self'\]\.?|^L__self___?")


def source_nodes(gm: Any) -> tuple[SourceNode, ...]:
    """The call nodes of ``gm`` in graph order (read before Inductor's passes change it)."""
    calls = {n.name for n in gm.graph.nodes if n.op.startswith("call_")}
    nodes = []
    for n in gm.graph.nodes:
        if n.name not in calls:
            continue
        stack = n.meta.get("nn_module_stack") or {}
        path, kind = (list(stack.values())[-1] if stack else ("", None))
        target = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))
        nodes.append(SourceNode(
            name=n.name, target=str(target), module=_SELF.sub("", str(path)),
            module_type=getattr(kind, "__name__", "") if kind is not None else "",
            inputs=tuple(a.name for a in n.all_input_nodes if a.name in calls),
        ))
    return tuple(nodes)
