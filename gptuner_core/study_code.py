"""Consent before running a study's code (no streamlit; the CLI and the dashboard share it).

Studies are meant to be shared, so a study folder is untrusted input. Reading one (its store,
its files) never runs anything it names; *running* it (``tune --continue``, ``bundle``,
``revalidate``, ``retune``, ``explain/diff --capture``, the dashboard's Resume) imports the code its
configuration names. :func:`code_references` lists that code (a task metric ``module:fn`` or
``file.py:fn``, a torch ``file.py:factory`` / ``.pt2`` model, a ``module:Class`` backend, a
``trtexec`` executable) outside gptuner's bundled assets and package; :func:`require_consent`
refuses, in one line naming it, unless the user said ``--trust-study-code`` (the dashboard asks
with its confirmation button instead).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gptuner_core.errors import GptunerError


ROOT = Path(__file__).resolve().parents[1]
BUNDLED = (ROOT / "assets", ROOT / "gptuner_core")
EXECUTABLE_OPTIONS = ("trtexec",)
FLAG = "--trust-study-code"


class UntrustedCodeError(GptunerError, PermissionError):
    """A study names code to run and the user has not consented to running it."""


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def _bundled(path_text: str, study: Path | None) -> bool:
    p = Path(path_text).expanduser()
    if not p.is_absolute():
        p = (study / p) if study is not None and (study / p).exists() else ROOT / p
    return any(_inside(p, b) for b in BUNDLED)


def _module_target(spec: str) -> str:
    target, _, _ = spec.rpartition(":")
    return target or spec


def code_references(config: Any, *, study: str | Path | None = None) -> list[str]:
    """Code a study's configuration would run, outside gptuner's bundled assets and package.

    ``config`` is a ``StudyConfig`` or its JSON dict. One line per reference, e.g.
    ``"task metric: /shared/evil.py:metric (Python file, imported and run)"``.
    """
    cfg = config.to_json() if hasattr(config, "to_json") else dict(config or {})
    study_dir = Path(study) if study is not None else None
    out: list[str] = []
    metric = cfg.get("task_metric")
    if metric and metric != "top1":
        target = _module_target(str(metric))
        if target.endswith(".py"):
            if not _bundled(target, study_dir):
                out.append(f"task metric: {metric} (Python file, imported and run)")
        elif not target.startswith("gptuner_core"):
            out.append(f"task metric: {metric} (Python module, imported and run)")
    backend = str(cfg.get("backend") or "")
    if ":" in backend and not backend.startswith("gptuner_core."):
        out.append(f"backend: {backend} (Python class, imported and run)")
    model = str(cfg.get("model") or "")
    if model:
        target = _module_target(model) if ":" in model and not Path(model).exists() else model
        if target.endswith(".py") and not _bundled(target, study_dir):
            out.append(f"model factory: {model} (Python file, imported and run)")
        elif target.endswith((".pt2", ".pt")) and not _bundled(target, study_dir):
            out.append(f"model: {model} (PyTorch file; loading it may run code)")
        elif (":" in model and not target.endswith(".py") and "/" not in target
              and not target.startswith("gptuner_core") and not Path(model).exists()):
            out.append(f"model factory: {model} (Python module, imported and run)")
    options = cfg.get("backend_options") or {}
    for key in EXECUTABLE_OPTIONS:
        value = options.get(key) if isinstance(options, dict) else None
        if value not in (None, "", "trtexec"):
            out.append(f"backend option {key}: {value} (executable, run for every candidate)")
    return out


def stored_config(study: str | Path) -> dict[str, Any] | None:
    """The configuration a study folder holds, as raw JSON (never validated, nothing imported):
    the store's, else ``study.json`` (a creation cut short); ``None`` when there is none."""
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.storage import open_store

    ws = StudyWorkspace(study)
    if ws.has_study():
        with open_store(ws.root, readonly=True) as store:
            return dict(store.config() or {})
    return ws.read_config()


def require_consent(study: str | Path, *, trusted: bool, config: Any = None) -> None:
    """Refuse (one line naming the code and the flag) to run code a study names, unless
    ``trusted``. ``config`` defaults to the study's stored configuration."""
    if trusted:
        return
    data = stored_config(study) if config is None else config
    refs = code_references(data or {}, study=study)
    if refs:
        msg = (f"study '{study}' names code that would run: {'; '.join(refs)}; pass {FLAG} to run it "
               "(only if you trust where the study came from)")
        raise UntrustedCodeError(msg)


__all__ = ["FLAG", "UntrustedCodeError", "code_references", "require_consent", "stored_config"]
