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

from gptuner_core.storage.paths import UntrustedPathError  # noqa: F401 - re-exported
from gptuner_core.storage.paths import confined
from gptuner_core.storage.paths import inside
from gptuner_core.storage.paths import is_path_option
from gptuner_core.study_code import code_references  # noqa: F401 - the dashboard's name for it


ROOT = Path(__file__).resolve().parents[2]
def _inside(path: Path, root: Path) -> bool:
    return inside(path, root)


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
