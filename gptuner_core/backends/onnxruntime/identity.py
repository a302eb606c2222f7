"""A canonical identity of an ONNX Runtime artifact, for duplicate detection.

At ``graph_optimization_level=all`` ONNX Runtime names the nodes it inserts for the NCHWc layout
(``ReorderOutput_token_233``) from a counter that differs between builds of one route, so the
optimized model's bytes differ although the graph is the same. The identity hashes a canonical
form instead: node names dropped (replaced by their position), intermediate value names replaced
by the order of their first appearance, initializers and value infos sorted by those names,
doc strings cleared. Graph inputs and outputs keep their names (they are the model's interface).
The session options ONNX Runtime reported (``session.json``) are hashed with it, since they
change how the same graph runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    import onnx


def _canonicalize(graph: onnx.GraphProto, rename: dict[str, str], keep: set[str]) -> None:
    import onnx

    def name(value: str) -> str:
        if not value or value in keep:
            return value
        return rename.setdefault(value, f"t{len(rename)}")

    for value in graph.input:
        value.name = name(value.name)
    for index, node in enumerate(graph.node):
        node.name = f"n{index}"
        node.doc_string = ""
        node.input[:] = [name(v) for v in node.input]
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _canonicalize(attr.g, rename, keep)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _canonicalize(sub, rename, keep)
        node.output[:] = [name(v) for v in node.output]
    for value in graph.output:
        value.name = name(value.name)
    inits = list(graph.initializer)
    for init in inits:
        init.name = name(init.name)
        init.doc_string = ""
    graph.ClearField("initializer")
    graph.initializer.extend(sorted(inits, key=lambda t: t.name))
    infos = list(graph.value_info)
    for info in infos:
        info.name = name(info.name)
    graph.ClearField("value_info")
    graph.value_info.extend(sorted(infos, key=lambda v: v.name))
    graph.name = ""
    graph.doc_string = ""


def canonical_model_sha256(path: str | Path) -> str:
    """sha256 of the canonical form of an ONNX file (see the module docstring)."""
    import onnx

    model = onnx.load(str(path))
    graph = model.graph
    keep = {v.name for v in graph.input} | {v.name for v in graph.output}
    _canonicalize(graph, {}, keep)
    model.doc_string = ""
    model.producer_version = ""
    return hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()


def artifact_identity(artifact: Path, optimized_name: str) -> str:
    """Identity of an artifact directory: canonical optimized model + reported session options."""
    session = {}
    meta = artifact / "session.json"
    if meta.is_file():
        session = json.loads(meta.read_text(encoding="utf-8")).get("session", {})
    h = hashlib.sha256()
    h.update(canonical_model_sha256(artifact / optimized_name).encode())
    h.update(b"\0" + json.dumps(session, sort_keys=True).encode())
    return "ort-canonical:" + h.hexdigest()
