"""A canonical identity of an ONNX Runtime artifact, for duplicate detection.

At ``graph_optimization_level=all`` ONNX Runtime names the nodes it inserts for the NCHWc layout
(``ReorderOutput_token_233``) from a counter that differs between builds of one route, so the
optimized model's bytes differ although the graph is the same. The identity hashes a canonical
form instead, in which a value is named by what computes it (see :func:`canonical_model_sha256`),
so node names, intermediate value names and the order of independent nodes (which ORT also
varies between builds) do not count. Graph inputs and outputs keep their names (they are the
model's interface).
The session options ONNX Runtime reported (``session.json``) are hashed with it, since they
change how the same graph runs. Weights ONNX Runtime did not change stay in the optimized model as
references into the data file of the model it loaded (external data), relative to that model's
folder, not the artifact's: they are read from there (``data_dir``) and hashed by content.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    import onnx


def _sha(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _tensor_sha(tensor: onnx.TensorProto) -> str:
    copy = type(tensor)()
    copy.CopyFrom(tensor)
    copy.name = ""
    copy.doc_string = ""
    return _sha("tensor", copy.SerializeToString(deterministic=True))


def _attribute_sha(attr: onnx.AttributeProto, scope: dict[str, str]) -> str:
    import onnx

    if attr.type == onnx.AttributeProto.GRAPH:
        return _sha("graph", attr.name, _graph_sha(attr.g, scope))
    if attr.type == onnx.AttributeProto.GRAPHS:
        return _sha("graphs", attr.name, *(_graph_sha(g, scope) for g in attr.graphs))
    if attr.type == onnx.AttributeProto.TENSOR:
        return _sha("t", attr.name, _tensor_sha(attr.t))
    copy = type(attr)()
    copy.CopyFrom(attr)
    copy.doc_string = ""
    return _sha("attr", copy.SerializeToString(deterministic=True))


def _graph_sha(graph: onnx.GraphProto, outer: dict[str, str]) -> str:
    """Merkle hash of a graph: every value is named by what computes it, never by its name."""
    scope = dict(outer)
    for value in graph.input:
        scope[value.name] = _sha("input", value.name, value.type.SerializeToString(deterministic=True))
    for init in graph.initializer:
        scope[init.name] = _tensor_sha(init)
    node_shas = []
    for node in graph.node:
        attrs = sorted(_attribute_sha(a, scope) for a in node.attribute)
        inputs = [scope.get(v, f"unknown:{v}") if v else "none" for v in node.input]
        node_sha = _sha("node", node.domain, node.op_type, *attrs, "|", *inputs)
        node_shas.append(node_sha)
        for index, out in enumerate(node.output):
            if out:
                scope[out] = _sha(node_sha, str(index))
    outputs = [
        _sha(v.name, scope.get(v.name, "missing"), v.type.SerializeToString(deterministic=True))
        for v in graph.output
    ]
    return _sha("graph", *sorted(node_shas), "|", *outputs)


def canonical_model_sha256(path: str | Path, data_dir: str | Path | None = None) -> str:
    """sha256 of an ONNX file's computation, independent of node/value names and node order.

    Each value is identified by what computes it (a Merkle hash over op type, domain, attributes
    and the identities of its inputs; graph inputs by name and type, initializers by content),
    the graph by the sorted identities of its nodes and those of its outputs. Opsets count too.
    External data is read from ``data_dir`` (default: the file's folder).
    """
    import onnx
    from onnx.external_data_helper import load_external_data_for_model

    model = onnx.load(str(path), load_external_data=False)
    load_external_data_for_model(model, str(data_dir if data_dir is not None else Path(path).parent))
    opsets = sorted(f"{o.domain}:{o.version}" for o in model.opset_import)
    return _sha("model", *opsets, _graph_sha(model.graph, {}))


def artifact_identity(artifact: Path, optimized_name: str, data_dir: Path | None = None) -> str:
    """Identity of an artifact directory: canonical optimized model + reported session options.

    ``data_dir``: the folder of the model ONNX Runtime optimized (where its external data is).
    """
    session = {}
    meta = artifact / "session.json"
    if meta.is_file():
        session = json.loads(meta.read_text(encoding="utf-8")).get("session", {})
    h = hashlib.sha256()
    h.update(canonical_model_sha256(artifact / optimized_name, data_dir).encode())
    h.update(b"\0" + json.dumps(session, sort_keys=True).encode())
    return "ort-canonical:" + h.hexdigest()
