"""Copy a candidate's artifact out of its study so that it opens on its own.

``--output`` and ``gptuner bundle`` both copy the recommended artifact; an artifact may need files
that live outside its folder (ONNX Runtime's optimized model of an external-data model refers to
the data file beside the model it loaded). The backend names them
(:meth:`~gptuner_core.backends.Backend.artifact_files`) and they are copied beside the artifact.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord


def copy_artifact(backend: str, options: dict, rec: CandidateRecord, dst: Path, *,
                  allowed: Sequence[Path]) -> Path:
    """Copy ``rec``'s artifact to ``dst`` with every file the backend says it needs.

    Every source must lie inside one of ``allowed`` (the study folder, the verified model's
    folder): a stored path is never followed out (:func:`~gptuner_core.storage.paths.confined`).
    ``dst`` appears whole: the copy goes to a temporary sibling renamed into place, so a kill
    leaves the old ``dst`` (or none), and the next run simply writes it again.
    """
    from gptuner_core.backends import BuildResult
    from gptuner_core.backends import load_backend
    from gptuner_core.storage.paths import UntrustedPathError
    from gptuner_core.storage.paths import confined
    from gptuner_core.storage.paths import inside

    src = confined(rec.artifact_path, allowed[0], what="artifact")
    build = BuildResult(artifact=src, effective_route=rec.effective_route or "",
                        info=dict(rec.extra.get("info") or {}))
    extra = load_backend(backend, options).artifact_files(build)
    for file, _ in extra:
        if not any(inside(file, root) for root in allowed):
            msg = f"artifact file '{file}' is outside the study folder '{allowed[0]}': not copied"
            raise UntrustedPathError(msg)
    from gptuner_core.engine.files.workspace import discard_stale_siblings

    dst.parent.mkdir(parents=True, exist_ok=True)
    discard_stale_siblings(dst)  # a copy (or its sidecar) a kill cut short
    discard_stale_siblings(dst.with_name(dst.name + ".json"))
    tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
    _remove(tmp)
    try:
        if src.is_dir():
            shutil.copytree(src, tmp)
        else:
            shutil.copy2(src, tmp)
        folder = tmp if tmp.is_dir() else tmp.parent
        for file, rel in extra:
            target = folder / rel
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(file, target)
        if dst.is_dir() and not dst.is_symlink():
            shutil.rmtree(dst)
        os.replace(tmp, dst)
    except BaseException:
        _remove(tmp)
        raise
    return dst


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()
