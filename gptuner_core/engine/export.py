"""Copy a candidate's artifact out of its study so that it opens on its own.

``--output`` and ``gptuner bundle`` both copy the recommended artifact; an artifact may need files
that live outside its folder (ONNX Runtime's optimized model of an external-data model refers to
the data file beside the model it loaded). The backend names them
(:meth:`~gptuner_core.backends.Backend.artifact_files`) and they are copied beside the artifact.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from gptuner_core.records import CandidateRecord


def copy_artifact(backend: str, options: dict, rec: CandidateRecord, dst: Path) -> Path:
    """Copy ``rec``'s artifact to ``dst`` with every file the backend says it needs."""
    from gptuner_core.backends import BuildResult
    from gptuner_core.backends import load_backend

    src = Path(rec.artifact_path or "")
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dst)
    build = BuildResult(artifact=src, effective_route=rec.effective_route or "",
                        info=dict(rec.extra.get("info") or {}))
    folder = dst if dst.is_dir() else dst.parent
    for file, rel in load_backend(backend, options).artifact_files(build):
        target = folder / rel
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target)
    return dst
