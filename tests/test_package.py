"""The package imports anywhere: no heavy library is loaded by ``import gptuner_core``."""

from __future__ import annotations

import subprocess
import sys


HEAVY = ("onnxruntime", "torch", "tensorrt", "cuda", "optuna", "streamlit", "plotly", "pandas", "scipy", "ray")


def test_import_is_light():
    """A fresh interpreter imports gptuner_core and its public API without heavy libraries."""
    code = (
        "import sys, gptuner_core\n"
        "assert all(hasattr(gptuner_core, n) for n in gptuner_core.__all__)\n"
        f"heavy = [m for m in sys.modules if m.split('.')[0] in {HEAVY!r}]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_backend_registry_reports_reasons():
    """Every backend is listed; TensorRT says precisely why it cannot run here."""
    from gptuner_core.backends import available_backends
    from gptuner_core.backends import default_backend_name

    listed = dict(available_backends())
    assert {"tensorrt", "onnxruntime", "torch", "trtexec"} <= set(listed)
    assert listed["onnxruntime"].available
    if not listed["tensorrt"].available:
        assert listed["tensorrt"].reason
        assert default_backend_name() == "onnxruntime"


def _module_imports() -> dict[str, set[str]]:
    """Imports between gptuner_core modules, lazy ones inside functions included (a lazy import
    loop is still a loop of responsibilities); ``TYPE_CHECKING`` blocks excluded."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "gptuner_core"
    names = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
             for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
        deps: set[str] = set()
        for sub in ast.walk(tree):
            if id(sub) in skip:
                continue
            if isinstance(sub, ast.ImportFrom) and sub.module and sub.module.startswith("gptuner_core"):
                for alias in sub.names:  # `from pkg import module` depends on the module
                    full = f"{sub.module}.{alias.name}"
                    deps.add(full if full in names else sub.module)
            elif isinstance(sub, ast.Import):
                deps.update(a.name for a in sub.names if a.name.startswith("gptuner_core"))
        graph[name] = deps - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_no_import_cycle_inside_the_package():
    """tuner, tuner_steps and remeasure used to import each other in a loop. A package whose
    ``__init__`` re-exports its submodules, which import each other through the package, is
    the one accepted shape (every member lies in that package)."""
    bad = []
    for comp in _cycles(_module_imports()):
        root = min(comp, key=len)  # the package whose __init__ re-exports the others
        if not all(m == root or m.startswith(root + ".") for m in comp) or root == "gptuner_core":
            bad.append(comp)
    assert not bad, bad


def test_no_module_over_400_lines():
    """STYLE: split a module along nouns when it passes about 400 lines."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    big = {str(p.relative_to(root)): n for p in (root / "gptuner_core").rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not big, big
