"""Paths inside a study folder are stored relative to it, so a moved or copied study (a bundled
example on another machine) still points at its own files.

Rows written before this (absolute paths of the machine that ran the study) are relocated on
read: the part from the study's own ``candidates/`` (or ``baselines/``, ``revalidation/``,
``pairwise/``) folder on is joined to where the study is now. String operations only: the
dashboard reads 100,000 records at a time.

A stored path is data from a folder that may come from someone else: :func:`confined` is the one
resolver every reader and copier uses before touching the file it names (no absolute path
elsewhere, no ``..`` escape, no symlink out).
"""

from __future__ import annotations

import os
from pathlib import Path

from gptuner_core.errors import GptunerError


PARTS = ("/candidates/", "/baselines/", "/revalidation/", "/pairwise/")


class StudyPaths:
    """Converts between the paths records carry (absolute) and the paths rows store."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = str(Path(root).absolute())
        self.real = os.path.realpath(self.root)

    def stored(self, path: str | None) -> str | None:
        """Relative to the study when inside it, else unchanged."""
        if not path or not os.path.isabs(path):
            return path
        for root in (self.root, self.real):
            if path.startswith(root + os.sep):
                return path[len(root) + 1:]
        return path

    def actual(self, path: str | None) -> str | None:
        """Absolute: a relative path joined to the study; an old absolute one relocated into it."""
        if not path:
            return path
        if not os.path.isabs(path):
            return f"{self.root}{os.sep}{path}"
        if path.startswith(self.root + os.sep) or path.startswith(self.real + os.sep):
            return path
        for part in PARTS:
            at = path.rfind(part)
            if at >= 0:
                return self.root + path[at:]
        return path


PATH_SUFFIXES = ("_dir", "_path", "_file")


def is_path_option(name: str) -> bool:
    """A backend option naming a file or folder (``cache_dir``, ``timing_cache_path``...)."""
    return name.endswith(PATH_SUFFIXES) or name == "cache_dir"


class UntrustedPathError(GptunerError, PermissionError):
    """A path named by a study or an option lies outside the folder it must stay in."""


def inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """True when ``path`` (``..`` and symlinks resolved) lies inside ``root``."""
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except (ValueError, OSError, RuntimeError):
        return False
    return True


def confined(path: str | os.PathLike[str] | None, root: str | os.PathLike[str], *, what: str = "file") -> Path:
    """The one resolver for a path read from a study (artifacts, logs, profiles, outputs, caches,
    info files): relative paths are taken from ``root``; the result, after ``..`` and symlinks,
    must stay inside ``root``. Every reader and copier of a study's files goes through it.

    Raises:
        UntrustedPathError: no path, or one that leaves ``root`` (absolute elsewhere, ``..``,
            a symlink out of the folder).
    """
    root = Path(root)
    if path is None or str(path) == "":
        msg = f"{what}: no path recorded"
        raise UntrustedPathError(msg)
    p = Path(path)
    p = p if p.is_absolute() else root / p
    if not inside(p, root):
        msg = (f"{what} '{path}' is outside the study folder '{root}': not used (a study only "
               "reads and writes files inside its own folder)")
        raise UntrustedPathError(msg)
    return p.resolve()


def confined_or_none(path: str | os.PathLike[str] | None, root: str | os.PathLike[str]) -> Path | None:
    """:func:`confined`, or ``None`` for a path that is missing or leaves ``root``."""
    try:
        return confined(path, root)
    except UntrustedPathError:
        return None
