"""The dashboard's trust boundary for study folders that come from elsewhere (no streamlit).

Studies are meant to be shared, so a study folder is untrusted input:

* **Opening** a study reads its SQLite store and files; it never imports or runs anything the
  study names (pages use registry names only and read records).
* **Files shown** by the UI (logs, artifacts) must lie inside the study folder:
  :func:`confined` refuses a stored path that points elsewhere (``../../etc/passwd``, an absolute
  path on another machine, a symlink out of the folder).
* **Backend options that are paths** (``cache_dir``, ``timing_cache_path``...) must lie inside the
  workspace: :func:`check_path_options`.
* **Resuming or re-running** a study runs code its configuration names. :func:`code_references`
  lists that code (task metric ``module:fn``, a torch ``file.py:factory`` / ``.pt2`` model, a
  ``module:Class`` backend, a ``trtexec`` executable) outside the bundled assets, and the page asks
  for explicit confirmation showing the list before it starts anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gptuner_core.errors import GptunerError


ROOT = Path(__file__).resolve().parents[2]
BUNDLED = (ROOT / "assets", ROOT / "gptuner_core")
PATH_SUFFIXES = ("_dir", "_path", "_file")
EXECUTABLE_OPTIONS = ("trtexec",)


class UntrustedPathError(GptunerError, PermissionError):
    """A path named by a study or an option lies outside the folder it must stay in."""


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def confined(path: str | Path | None, root: str | Path, *, what: str = "file") -> Path:
    """``path`` (relative paths are taken from ``root``) resolved, if it stays inside ``root``.

    Raises:
        UntrustedPathError: the path (after ``..`` and symlinks) leaves ``root``.
    """
    root = Path(root)
    if path is None or str(path) == "":
        msg = f"{what}: no path recorded"
        raise UntrustedPathError(msg)
    p = Path(path)
    p = p if p.is_absolute() else root / p
    if not _inside(p, root):
        msg = (f"{what} '{path}' is outside the study folder '{root}': not shown (a study only "
               "shows files inside its own folder)")
        raise UntrustedPathError(msg)
    return p.resolve()


def is_path_option(name: str) -> bool:
    return name.endswith(PATH_SUFFIXES) or name == "cache_dir"


def check_path_options(options: dict[str, Any], workspace: str | Path) -> list[str]:
    """One line per backend option that is a path outside the workspace (empty = allowed)."""
    out = []
    for key, value in options.items():
        if is_path_option(key) and value not in (None, ""):
            p = Path(str(value)).expanduser()
            p = p if p.is_absolute() else Path(workspace) / p
            if not _inside(p, Path(workspace)):
                out.append(f"backend option {key}='{value}' is outside the workspace "
                           f"'{workspace}' (paths must stay inside it)")
    return out


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
        elif (backend == "torch" and ":" in model and not target.endswith(".py")
              and "/" not in target and not target.startswith("gptuner_core")):
            out.append(f"model factory: {model} (Python module, imported and run)")
    options = cfg.get("backend_options") or {}
    for key in EXECUTABLE_OPTIONS:
        value = options.get(key)
        if value not in (None, "", "trtexec"):
            out.append(f"backend option {key}: {value} (executable, run for every candidate)")
    return out


def study_file(study: str | Path, stored: str | None, *, what: str = "file",
               fallback: str | Path | None = None) -> tuple[Path | None, str]:
    """The file to show for a path the store recorded, and a note (``""`` when none).

    A stored path inside the study is used as is. A path recorded on another machine
    (``/tmp/x/candidates/00001/log.txt``) is re-rooted at this study's ``candidates/...`` when
    that copy exists. Anything else is refused: ``(None, reason)``.
    """
    study = Path(study)
    if stored:
        try:
            return confined(stored, study, what=what), ""
        except UntrustedPathError as exc:
            refusal = str(exc)
        parts = Path(stored).parts
        if "candidates" in parts:
            tail = Path(*parts[len(parts) - 1 - parts[::-1].index("candidates"):])
            local = study / tail
            if local.exists() and _inside(local, study):
                return local.resolve(), (f"{what} was recorded at '{stored}' (another machine or "
                                         f"folder); showing the study's own copy '{tail}'")
        return None, refusal
    if fallback is not None and Path(fallback).exists() and _inside(Path(fallback), study):
        return Path(fallback).resolve(), ""
    return None, f"{what}: none recorded"
