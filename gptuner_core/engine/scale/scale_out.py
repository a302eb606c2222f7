"""Scale-out settings and the pool seam: how many candidates run at once, and where.

:class:`ScaleOut` is what a study asks for (``--build-workers``, ``--ray``, ``--workers``,
``--normalize``); a :class:`CandidatePool` runs candidates concurrently for
``engine.scale.parallel.run_parallel``: ``engine.scale.build_ahead`` (one device, builds ahead) and
``engine.scale.ray_workers`` (one Ray actor per device); ``engine.scale.pools.make_pool`` picks one.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Protocol

from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterator
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord
    from gptuner_core.strategies import Proposal


class WorkerLost(Exception):  # noqa: N818 - an infrastructure signal, always answered by a re-queue
    """The worker running a candidate died (not the candidate's own process): re-queue it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleOut:
    """How many candidates run at once, and where.

    ``build_workers``: builds in flight beside the one measurement on this host's device (1: one
    candidate at a time, as before; 0: :func:`default_build_workers`). ``ray``: ``None`` (no Ray),
    ``"auto"`` (the running cluster, else a local one) or a cluster address; ``workers``: Ray
    workers, one per device. ``normalize``: allow workers whose devices differ (each speed-up is
    then computed against the default route measured on the candidate's own device).
    """

    build_workers: int = 1
    ray: str | None = None
    workers: int = 1
    normalize: bool = False

    def validated(self) -> ScaleOut:
        if self.build_workers < 0:
            msg = f"build workers must be >= 0 (0: automatic); got {self.build_workers}"
            raise ConfigError(msg)
        if self.workers < 1:
            msg = f"workers must be >= 1; got {self.workers}"
            raise ConfigError(msg)
        if self.ray is not None and not str(self.ray).strip():
            msg = "ray must be 'auto' or a cluster address (host:port or ray://...); got ''"
            raise ConfigError(msg)
        if self.ray is None and self.workers > 1:
            msg = f"{self.workers} workers need Ray (--ray auto or an address); got none"
            raise ConfigError(msg)
        if self.ray is not None:
            import importlib.util

            if importlib.util.find_spec("ray") is None:
                msg = f"--ray {self.ray} needs Ray, which is not installed: pip install 'gptuner[ray]'"
                raise ConfigError(msg)
        return self


def default_build_workers(cores: int | None = None, memory_gib: float | None = None) -> int:
    """Builds to run ahead: a third of the cores, one per 6 GiB of memory, at most 8, at least 1
    (a 2-core machine builds one at a time; a 16-core 128 GiB host builds five)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if memory_gib is None:
        try:
            memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        except (ValueError, OSError, AttributeError):
            memory_gib = 8.0
    return max(1, min(cores // 3, int(memory_gib // 6), 8))


class CandidatePool(Protocol):
    """Runs candidates concurrently for :func:`run_parallel` (local build-ahead, Ray workers)."""

    width: int  # candidates in flight at most

    def submit(
        self, proposal: Proposal, number: int, history: Sequence[CandidateRecord],
        artifacts: dict[str, int], on_phase: Callable[[str], None],
    ) -> Future[CandidateRecord]:
        """Start candidate ``number``; the future raises :class:`WorkerLost` to re-queue it."""

    def measuring(self) -> contextlib.AbstractContextManager[None]:
        """Held around a re-measurement of the coordinator (drift, racing)."""

    def close(self) -> None: ...

    # optional: ``workers() -> list[dict]``, each worker's device and state, for the Live page




def run_in_thread(work: Callable[[], CandidateRecord], name: str) -> Future[CandidateRecord]:
    """``work()`` in a daemon thread (a Ctrl-C of the tuner never waits for it), as a future."""
    fut: Future[CandidateRecord] = Future()
    fut.set_running_or_notify_cancel()

    def main() -> None:
        try:
            fut.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the coordinator
            fut.set_exception(exc)

    threading.Thread(target=main, name=name, daemon=True).start()
    return fut


@contextlib.contextmanager
def nothing() -> Iterator[None]:
    yield
