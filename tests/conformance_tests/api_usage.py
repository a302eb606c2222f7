"""What TensorRT and cuda-python API the backend (and its repro snippet) uses, read from the source.

The backend's modules and the generated Python snippet are parsed with :mod:`ast`. Every
attribute chain rooted at the ``trt`` module (``trt.ILogger.Severity.ERROR``) and every attribute
of a TensorRT object held in a known variable (``config.build_route`` -> ``IBuilderConfig``) is a
*use*; calls keep their positional count and keyword names, so the conformance test can check them
against the real pybind11 signatures. cuda-python uses are chains rooted at the runtime module
(``rt.cudaMemcpyAsync``). The variable names are the ones the backend uses; a new one must be
added to :data:`OBJECTS`, or its uses are invisible (the test lists every unmapped receiver of a
TensorRT call to catch that).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
BACKEND = ROOT / "gptuner_core" / "backends" / "tensorrt"
TRT_FILES = ("build.py", "timing_cache.py", "runner.py", "probe.py", "backend.py")
CUDA_FILES = ("runner.py", "probe.py")

#: variable (or ``self.<attr>``) name -> TensorRT class it holds
OBJECTS: dict[str, str] = {
    "builder": "Builder",
    "config": "IBuilderConfig",
    "parser": "OnnxParser",
    "profile": "IOptimizationProfile",
    "runtime": "Runtime",
    "_runtime_obj": "Runtime",
    "engine": "ICudaEngine",
    "_engine": "ICudaEngine",
    "insp": "EngineInspector",  # create_engine_inspector() returns tensorrt.EngineInspector
    "_context": "IExecutionContext",
    "cache": "ITimingCache",
    "base": "ITimingCache",
    "own": "ITimingCache",
}
#: (class, method) -> class of the returned object, for chained calls
RETURNS: dict[tuple[str, str], str] = {
    ("IBuilderConfig", "get_timing_cache"): "ITimingCache",
    ("IBuilderConfig", "create_timing_cache"): "ITimingCache",
    ("Builder", "create_builder_config"): "IBuilderConfig",
}
TRT_ROOTS = ("trt", "_trt")
CUDA_ROOTS = ("rt", "cudart", "_rt")


@dataclass(frozen=True, slots=True)
class Use:
    chain: str  # "IBuilderConfig.build_route", "ILogger.Severity.ERROR", "Builder" (constructor)
    call: tuple[int, tuple[str, ...]] | None  # (positional count, keyword names) when called
    where: str


def _chain(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _root(parts: list[str]) -> tuple[str, list[str]]:
    if parts[0] == "self" and len(parts) > 1:
        return parts[1], parts[2:]
    return parts[0], parts[1:]


def scan(tree: ast.AST, label: str, roots: tuple[str, ...], objects: dict[str, str]) -> list[Use]:
    calls: dict[int, ast.Call] = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    inner: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute):
            inner.add(id(n.value))
    uses: list[Use] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
            parts = _chain(node.value.func)
            if parts:
                name, rest = _root(parts)
                cls = objects.get(name)
                if cls and len(rest) == 1 and (cls, rest[0]) in RETURNS:
                    uses.append(_use(f"{RETURNS[cls, rest[0]]}.{node.attr}", calls.get(id(node)), f"{label}:{node.lineno}"))
        if not isinstance(node, (ast.Attribute, ast.Name)) or id(node) in inner:
            continue
        parts = _chain(node)
        if not parts or len(parts) < 2:
            continue
        name, rest = _root(parts)
        if name in roots and rest:
            uses.append(_use(".".join(rest), calls.get(id(node)), f"{label}:{node.lineno}"))
        elif name in objects and rest:
            uses.append(_use(".".join([objects[name], *rest]), calls.get(id(node)), f"{label}:{node.lineno}"))
    return uses


def _use(chain: str, call: ast.Call | None, where: str) -> Use:
    if call is None:
        return Use(chain, None, where)
    kws = tuple(sorted(k.arg for k in call.keywords if k.arg))
    return Use(chain, (len(call.args), kws), where)


#: uses the scan cannot see: the ILogger.log override is called *by* TensorRT with (severity, msg)
EXTRA: tuple[Use, ...] = (Use("ILogger.log", (2, ()), "build.py make_logger: _Logger.log override"),)


def backend_uses() -> list[Use]:
    out = list(EXTRA)
    for name in TRT_FILES:
        tree = ast.parse((BACKEND / name).read_text())
        out += scan(tree, name, TRT_ROOTS, OBJECTS)
    return out


def snippet_uses() -> list[Use]:
    """Uses of the generated repro snippet, for a route with every feature (profiles, workspace, fp16)."""
    from gptuner_core.backends.tensorrt.repro import python_snippet
    from gptuner_core.routes import Route

    opts = {"workspace_mb": 64, "opt_level": 4, "profiles": {"x": {"min": [1, 4], "opt": [2, 4], "max": [4, 4]}}}
    text = python_snippet(Path("model.onnx"), Route.parse("-kgen:tiling=2 -gptuner:precision=fp16"), opts)
    objects = {**OBJECTS, "network": "INetworkDefinition", "logger": "Logger", "plan": "IHostMemory"}
    return scan(ast.parse(text), "repro snippet", ("trt",), objects)


def cuda_uses() -> list[Use]:
    out = []
    for name in CUDA_FILES:
        tree = ast.parse((BACKEND / name).read_text())
        out += [u for u in scan(tree, name, CUDA_ROOTS, {}) if u.chain.startswith("cuda")]
    return out


def chains(uses: list[Use]) -> list[str]:
    return sorted({u.chain for u in uses})


def unmapped_receivers(member_names: set[str]) -> list[str]:
    """Calls ``x.<TensorRT method>(...)`` whose receiver ``x`` is not a known TensorRT object.

    Such a call would escape :func:`backend_uses`; the conformance test requires none.
    """
    out = []
    known = set(OBJECTS) | set(TRT_ROOTS) | {"self"}
    for name in TRT_FILES:
        for node in ast.walk(ast.parse((BACKEND / name).read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in member_names:
                recv = node.func.value
                root = _chain(recv)
                if root is None:
                    if isinstance(recv, ast.Call):
                        continue  # chained call: covered by RETURNS
                    out.append(f"{name}:{node.lineno} <expr>.{node.func.attr}")
                elif _root(root)[0] not in known:
                    out.append(f"{name}:{node.lineno} {'.'.join(root)}.{node.func.attr}")
    return sorted(out)
