"""Where a study's first seconds go, for benchmarks: with ``$GPTUNER_STARTUP_TRACE`` naming a
file, the CLI and the fork server append one JSON line per set-up step to it
(``{"who", "step", "start", "end"}``, wall-clock seconds), and ``benchmarks/gpu_study.py``
lays them beside the candidates' phases. Unset (the default), nothing is written. Standard
library only: the fork server imports it before anything else."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator


#: the variable naming the trace file
ENV = "GPTUNER_STARTUP_TRACE"


@contextlib.contextmanager
def step(who: str, name: str) -> Iterator[None]:
    """Time the block as ``who``'s step ``name`` (one appended line; nothing without the file)."""
    path = os.environ.get(ENV)
    start = time.time()
    try:
        yield
    finally:
        if path:
            line = json.dumps({"who": who, "step": name, "start": start, "end": time.time()})
            with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as out:
                out.write(line + "\n")


def read(path: str | os.PathLike[str]) -> list[dict]:
    """The trace's steps in the order they started (unreadable lines skipped)."""
    rows = []
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as f:
        for line in f:
            with contextlib.suppress(ValueError):
                rows.append(json.loads(line))
    return sorted(rows, key=lambda r: r.get("start", 0.0))
