"""A competing CPU-bound load that a benchmark starts and stops itself.

``competing_load(n)`` starts ``n`` processes that spin in a pure-Python loop (one core each, at
normal priority, like another program the user left running) and kills exactly those processes,
by pid, when the block ends, however it ends.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator


SPIN = "import time\nx = 0\nwhile True:\n    x = (x * 1103515245 + 12345) % 2147483648\n"


@contextlib.contextmanager
def competing_load(n: int) -> Iterator[list[int]]:
    """Run ``n`` busy processes inside the block; yields their pids."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(max(0, n))]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait(timeout=10)
