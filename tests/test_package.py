"""The package imports anywhere: no heavy library is loaded by ``import gptuner_core``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
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
    """Imports between gptuner_core modules, lazy ones inside functions and ``TYPE_CHECKING``
    blocks included (a lazy or type-only import loop is still a loop of responsibilities)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "gptuner_core"
    names = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
             for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps: set[str] = set()
        for sub in ast.walk(tree):
            if isinstance(sub, ast.ImportFrom) and sub.module and sub.module.startswith("gptuner_core"):
                for alias in sub.names:  # `from pkg import module` depends on the module
                    full = f"{sub.module}.{alias.name}"
                    deps.add(full if full in names else sub.module)
            elif isinstance(sub, ast.Import):
                deps.update(a.name for a in sub.names if a.name.startswith("gptuner_core"))
        graph[name] = deps - {name}
    return graph


def test_no_import_cycle_inside_the_package():
    """No two modules import each other, directly or round about (issue 42: 7 circles, among them
    knobs <-> routes and config -> config_checks -> strategies -> warm_start -> config). The same
    rule as the ``no_cycles`` import-linter contract, without import-linter."""
    from gptuner_core.testing.import_contracts import strongly_connected

    assert strongly_connected(_module_imports()) == []


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every gptuner_core import in a file, inside functions too."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gptuner_core"):
            if node.module == "gptuner_core":  # `from gptuner_core import views`
                out += [(node.lineno, f"gptuner_core.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("gptuner_core")]
    return out


def test_pages_import_only_the_dashboard_and_views():
    """A page is a thin view: it imports gptuner_core.dashboard (whose ``core`` module holds the
    engine names pages use) and gptuner_core.views, nothing else of the package (import-linter
    only sees packages, and app_pages/ is not one)."""
    allowed = ("gptuner_core.dashboard", "gptuner_core.views")
    pages = sorted((ROOT / "app_pages").glob("*.py")) + [ROOT / "app.py"]
    assert len(pages) > 5
    bad = [f"{p.relative_to(ROOT)}:{line} imports {mod}" for p in pages for line, mod in _imported_modules(p)
           if not any(mod == a or mod.startswith(a + ".") for a in allowed)]
    assert not bad, "\n".join(bad)


def test_import_contracts_hold():
    """``lint-imports`` (pyproject.toml's [tool.importlinter]: layers, backends independent of
    strategies, no circle) passes; a new violation fails here and in ``./dev.sh test``."""
    pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e '.[dev]')")
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    out = subprocess.run([sys.executable, "-c", code, "--no-cache"], capture_output=True, text=True,
                         cwd=ROOT, check=False)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_no_module_over_400_lines():
    """STYLE: split a module along nouns when it passes about 400 lines."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    big = {str(p.relative_to(root)): n for p in (root / "gptuner_core").rglob("*.py")
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not big, big
