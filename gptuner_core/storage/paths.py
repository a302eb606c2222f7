"""Paths inside a study folder are stored relative to it, so a moved or copied study (a bundled
example on another machine) still points at its own files.

Rows written before this (absolute paths of the machine that ran the study) are relocated on
read: the part from the study's own ``candidates/`` (or ``baselines/``, ``revalidation/``,
``pairwise/``) folder on is joined to where the study is now. String operations only: the
dashboard reads 100,000 records at a time.
"""

from __future__ import annotations

import os
from pathlib import Path


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
