"""The device turn of a candidate that builds beside others and measures in the same process.

With overlap on (``engine.scale.overlap``) a candidate's process builds while other candidates
build or measure, then enters the ``wait`` phase and waits for its turn on the measuring device:
the parent writes the ``turn`` file in the candidate's folder once it holds the device for it.
The child then pins itself to the cores the file names and measures what it built, in the same
process: nothing is compiled twice. While building it runs on the build cores
(``ChildJob.turn["build_cpus"]``), and so do the compile workers it starts.

The turn has two steps when the grant says ``warmup``: the device *shared* first, on the build
cores, for the calls that need the device but not the device alone (loading, the first calls:
lazy CUDA module loading, cuDNN set-up, CUDA graph capture; the accuracy gate's outputs). Other
candidates do the same meanwhile, but nothing is measured. The child then enters ``ready`` and
waits for the ``turn_alone`` file: the device alone, on the measuring cores (kept free of
builds), for the timed samples and the profile. A candidate that holds the device from before
its build (its build or loading runs work on it) gets the device alone in one step.

Once its device work is done (the samples, the profile's device part) the child re-pins itself to
the build cores and enters the ``report`` phase (:func:`leave_device`): the parent gives the
device to the next candidate while this one writes its outputs, runs the task metric and makes
its profile on the CPU.

A re-validation round's process started ahead (``ChildJob.turn["wait"]``) may be granted the same
warm-up step before its turn (``engine.evaluate.round_prefetch``), and loads at the niceness
its place in line gives it (``turn["nice"]``: later rounds below earlier ones, all below the
builds) and is given the normal priority back with its turn where the system allows it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any


TURN = "turn"
WAIT = "wait"
#: the phase of a candidate's calls on the shared device (its turn's first step), and of its
#: wait for the device alone (the second), granted by the :data:`TURN_ALONE` file
WARMUP = "warmup"
READY = "ready"
TURN_ALONE = "turn_alone"
#: the phase after a candidate's last use of the device: what is left is CPU work
REPORT = "report"
#: written by a candidate's process once built, before it waits for its turn: its build (a
#: ``ChildResult``), so that a re-validation process can start loading it ahead of the result
BUILT = "built.json"


def pin(cpus: Sequence[int] | None) -> None:
    """Run this process (and the processes it starts from now on) on ``cpus`` (none: as is)."""
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {int(c) for c in cpus})


def lower_priority(nice: int) -> None:
    """Run this process (and the workers it starts) at niceness ``nice`` (0: as is)."""
    if nice > 0 and hasattr(os, "setpriority"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, min(int(nice), 19))


def restore_priority() -> None:
    """Every thread of this process back to niceness 0 where allowed (Linux keeps a niceness
    per thread; raising one's priority needs CAP_SYS_NICE or a matching RLIMIT_NICE: without
    it the process stays where it was)."""
    if not hasattr(os, "setpriority"):
        return
    try:
        threads = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    for tid in threads:
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, tid, 0)


def wait_turn(workdir: Path, phase: Callable[[str], None], poll_s: float = 0.005, *,
              waiting: str = WAIT, name: str = TURN) -> dict[str, Any]:
    """Enter the ``waiting`` phase and return the parent's grant once it wrote the file ``name``
    (pinned to its ``cpus`` by then). The parent's death ends this process (PR_SET_PDEATHSIG)."""
    phase(waiting)
    path = workdir / name
    while not path.exists():
        time.sleep(poll_s)
    grant = _obey(path)
    pin(grant.get("cpus"))
    return grant


def _obey(path: Path) -> dict[str, Any]:
    """The parent's grant in the ``turn`` file ``path``; a cancel (started ahead and not needed
    after all) ends this process here."""
    grant = json.loads(path.read_text(encoding="utf-8"))
    if grant.get("cancel"):
        os._exit(0)
    return grant


def exit_when_cancelled(workdir: Path, poll_s: float = 0.05) -> None:
    """While this process loads ahead of its turn, exit as soon as the parent cancels it (a
    finalist dropped, or a waiting candidate that did not become one), not once loaded: its
    compile would hold a build core the finalists' processes load on (on the H100 cancelled
    processes loaded on for 23 s beside them). A watcher thread; it stops at the grant."""
    import threading

    path = workdir / TURN

    def watch() -> None:
        while not path.exists():
            time.sleep(poll_s)
        _obey(path)  # a grant (written atomically): nothing more to watch

    threading.Thread(target=watch, name="gptuner-cancel-watch", daemon=True).start()


def leave_device(turn: dict[str, Any], phase: Callable[[str], None]) -> None:
    """Give the device back before the CPU work that ends a candidate: off the measuring cores
    (to the build cores, below the builds), then the ``report`` phase the parent waits for."""
    pin(turn.get("build_cpus"))
    lower_priority(1)
    phase(REPORT)
