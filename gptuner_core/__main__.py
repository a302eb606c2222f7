from __future__ import annotations

import os
import sys
from pathlib import Path


def _drop_working_directory() -> None:
    """``python -m`` puts the working directory first on ``sys.path``; the console script does not.
    A folder the user stands in (a study from someone else holding ``onnxruntime.py``) must not
    shadow a module gptuner imports, so it goes, unless it is where gptuner itself lives."""
    home = Path(__file__).resolve().parents[1]
    if sys.path and sys.path[0] in ("", os.getcwd()) and Path(sys.path[0] or ".").resolve() != home:
        del sys.path[0]


_drop_working_directory()

from gptuner_core.cli import console  # noqa: E402


console()
