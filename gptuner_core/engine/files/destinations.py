"""Where a command may write: never over a study's own files.

``gptuner export ST --trtexec-cache ST/study.sqlite`` once replaced the store with a tuning cache
(the study was lost). Every path a command writes (an export, a report, a bundle, ``--output``) is
checked here first, symlinks and ``..`` resolved: the study folder itself, its store and config,
its inputs and logs, and everything under its managed sub-folders are refused.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from gptuner_core.errors import ConfigError


#: files of a study folder that belong to the study (engine.files.workspace's layout)
OWN_FILES = (
    "study.sqlite", "study.sqlite-wal", "study.sqlite-shm", "study.sqlite-journal", "study.json",
    "inputs.npz", "calibration.npz", "labels.npy", "golden.npz", "reference.json", "stop",
    "tuner.log", "tuner.pid", "measure_shape_*.npz", ".creating*", ".study.json.tmp*",
)
#: sub-folders the study manages (candidates, drift baselines, re-validation, pairwise runs)
OWN_FOLDERS = ("candidates", "baselines", "revalidation", "pairwise")


def own_part(study: str | os.PathLike[str], path: str | os.PathLike[str]) -> str | None:
    """The part of the study ``path`` would overwrite (``"study.sqlite"``, ``"candidates/..."``,
    ``"the study folder"``), or ``None`` when it is not one of the study's own files."""
    root = Path(study).resolve()
    target = Path(path).resolve()
    if target == root:
        return "the study folder"
    if root.is_relative_to(target):
        return "a folder holding the study"
    try:
        rel = target.relative_to(root)
    except ValueError:
        return None
    first = rel.parts[0]
    if first in OWN_FOLDERS or (len(rel.parts) == 1 and any(fnmatch.fnmatch(first, p) for p in OWN_FILES)):
        return rel.as_posix()
    return None


#: what ``tune --output X`` writes: the artifact, its ``X.json`` sidecar and the ``X.bundle`` folder
OUTPUT_SUFFIXES = ("", ".json", ".bundle")


def _studies_around(target: Path) -> list[Path]:
    """Study folders ``target`` is in or is: a folder holding study.sqlite, or study.json unless
    it is a bundle (finished or cut short: a bundle carries a copy of its study's study.json, and
    ``tune --output X`` replaces the ``X.bundle`` it wrote before)."""
    from gptuner_core.bundle.manifest import MANIFEST
    from gptuner_core.bundle.staging import is_partial_bundle

    def is_study(p: Path) -> bool:
        if (p / "study.sqlite").exists():
            return True
        return (p / "study.json").exists() and not ((p / MANIFEST).exists() or is_partial_bundle(p))

    return [p for p in [target, *target.parents] if is_study(p)]


def check_destination(
    study: str | os.PathLike[str] | None, path: str | os.PathLike[str], flag: str,
    *, suffixes: tuple[str, ...] = ("",),
) -> None:
    """Refuse (ConfigError, one line) a destination that is one of ``study``'s own files, or of
    any other study it lies in (``tune --output OTHER/study.sqlite`` overwrote another study);
    ``suffixes``: the sibling paths the command writes too (``X.json`` beside ``X``)."""
    for suffix in suffixes:
        target = Path(f"{os.fspath(path)}{suffix}")
        roots = [Path(study)] if study is not None else []
        for root in [*roots, *_studies_around(target.resolve())]:
            part = own_part(root, target)
            if part is None:
                continue
            if part == "the study folder":
                what = f"is the study folder '{root}', which already holds a study"
            elif part.startswith("a folder holding"):
                what = f"is {part} '{root}'"
            else:
                what = f"would write over {part}, a file of the study in '{root}'"
            msg = (f"{flag} '{path}' {what} (expected a path outside the study's own files, "
                   "e.g. beside its folder)")
            raise ConfigError(msg)


__all__ = ["OUTPUT_SUFFIXES", "OWN_FILES", "OWN_FOLDERS", "check_destination", "own_part"]
