"""The loop with several candidates in flight: build ahead on one device, or Ray workers.

Same rules as :func:`gptuner_core.engine.loop.run_loop` (it hands over here when a
:class:`ScaleOut` asks for more than one candidate at a time), plus:

* the strategy is asked with the proposals in flight (``Strategy.ask(history, pending)``), so no
  route is proposed twice; ``None`` with proposals in flight means "wait for a result";
* the default route (candidate 0) runs alone first: it defines the golden outputs and 1.0x;
* candidate numbers are given in proposal order and results are committed to the sink (the
  store) in that order, whatever order they finish in, so a study continued after a kill is
  exact: every committed candidate is kept, those in flight (``RUNNING`` in the store) re-run;
* a build whose artifact equals that of a candidate committed earlier (two equal routes built at
  once) is recorded as DUPLICATE of it, as the sequential loop's child would have found;
* a worker lost with a candidate in flight (:class:`WorkerLost`: its process, node or Ray died)
  re-queues that candidate with the same number; it is never recorded as the candidate's crash.
  A candidate that crashes its own process is a result (CRASHED), not retried;
* budgets stop new proposals; candidates in flight are finished and committed;
* re-measurements (drift sentinel, racing) wait until nothing is in flight, and hold the
  measuring device (``CandidatePool.measuring``).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections import OrderedDict
from concurrent.futures import FIRST_COMPLETED
from concurrent.futures import Future
from concurrent.futures import wait
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Protocol

from gptuner_core.engine import loop
from gptuner_core.errors import ConfigError
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import StudyStatus


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterator
    from collections.abc import Sequence

    from gptuner_core.engine.evaluator import Evaluator
    from gptuner_core.records import ChildResult
    from gptuner_core.strategies import Proposal
    from gptuner_core.strategies import Strategy


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


class _Gated:
    """The evaluator, whose re-measurements hold the pool's measuring side."""

    def __init__(self, evaluator: Evaluator, pool: CandidatePool) -> None:
        self.evaluator, self.pool = evaluator, pool

    def evaluate(self, *args, **kw):  # type: ignore[no-untyped-def]
        return self.evaluator.evaluate(*args, **kw)

    def remeasure(self, record: CandidateRecord, purpose: str, scale: float = 1.0) -> ChildResult:
        with self.pool.measuring():
            return self.evaluator.remeasure(record, purpose, scale)


def make_pool(scale: ScaleOut | None, evaluator: Evaluator) -> CandidatePool | None:
    """The pool ``scale`` asks for, or ``None`` for today's one-at-a-time loop."""
    if scale is None:
        return None
    scale = scale.validated()
    if scale.ray is not None:
        from gptuner_core.engine.ray_workers import RayPool

        return RayPool(scale, evaluator)
    workers = scale.build_workers or default_build_workers()
    if workers <= 1:
        return None
    from gptuner_core.engine.build_ahead import BuildAheadPool

    return BuildAheadPool(evaluator, workers)


def _reason(budget: loop.Budget, history: list[CandidateRecord], in_flight: int, sink: loop.Sink) -> str:
    if budget.max_candidates is not None and len(history) + in_flight >= budget.max_candidates:
        return f"candidate budget reached ({budget.max_candidates})"
    return loop.budget_reason(budget, history, sink)


def late_duplicate(rec: CandidateRecord, artifacts: dict[str, int], history: list[CandidateRecord]) -> CandidateRecord:
    """A candidate built while an equal artifact was in flight: DUPLICATE of the earlier one."""
    key = rec.extra.get("artifact_key")
    if rec.state is CandidateState.DUPLICATE or not key or key not in artifacts:
        return rec
    original = next(r for r in history if r.number == artifacts[key])
    return rec.replace(
        state=CandidateState.DUPLICATE, duplicate_of=original.number, accuracy=original.accuracy,
        latency=original.latency, speedup=original.speedup, speedup_ci=original.speedup_ci,
        measure_time_s=0.0, samples_ms=(), error=None,
    )


def _ended(history: list[CandidateRecord], space_size: int, search: str) -> loop.LoopEnd:
    if not history:
        return loop.LoopEnd(status=StudyStatus.FINISHED, reason="no route proposed", exhausted=True)
    if len(history) >= space_size:
        return loop.LoopEnd(status=StudyStatus.FINISHED, reason="search space exhausted", exhausted=True)
    return loop.LoopEnd(status=StudyStatus.FINISHED, exhausted=True, reason=(
        f"strategy '{search}' finished after {len(history)} of {space_size} routes"
    ))


def run_parallel(
    *,
    strategy: Strategy,
    evaluator: Evaluator,
    pool: CandidatePool,
    history: list[CandidateRecord],
    key: Callable[[str], str],
    budget: loop.Budget,
    sink: loop.Sink,
    space_size: int,
    search: str,
) -> loop.LoopEnd:
    """:func:`loop.run_loop` with up to ``pool.width`` candidates in flight (module docstring)."""
    gated = _Gated(evaluator, pool)
    seen = {key(r.requested_route) for r in history}
    artifacts = {
        r.extra["artifact_key"]: r.number
        for r in history
        if r.extra.get("artifact_key") and r.state is CandidateState.COMPLETE
    }
    inflight: OrderedDict[int, tuple[Proposal, Future[CandidateRecord]]] = OrderedDict()
    phases: queue.Queue[tuple[str, str]] = queue.Queue()
    next_number = (history[-1].number + 1) if history else 0
    end: loop.LoopEnd | None = None
    held: Proposal | None = None  # a re-measurement waiting for the candidates in flight
    skipped = 0

    def submit(number: int, proposal: Proposal) -> Future[CandidateRecord]:
        route = str(proposal.route)
        return pool.submit(proposal, number, list(history), dict(artifacts),
                           lambda ph, route=route: phases.put((route, ph)))

    loop._drift(gated, history, budget, sink)  # noqa: SLF001 - the loop's own drift rule
    try:
        while True:
            for number, (proposal, fut) in list(inflight.items()):  # re-queue lost workers' work
                if fut.done() and isinstance(fut.exception(), WorkerLost):
                    inflight[number] = (proposal, submit(number, proposal))
            while inflight:  # commit in proposal order
                number, (proposal, fut) = next(iter(inflight.items()))
                if not fut.done():
                    break
                if isinstance(fut.exception(), WorkerLost):  # lost since the check above
                    inflight[number] = (proposal, submit(number, proposal))
                    break
                del inflight[number]
                rec = late_duplicate(fut.result(), artifacts, history)
                hook = getattr(pool, "committed", None)  # e.g. fetch a remote artifact
                rec = hook(rec, history) if hook is not None else rec
                history.append(rec if rec.number == 0 else rec.replace(samples_ms=()))
                sink.finished(rec, history)
                strategy.tell(rec)
                if rec.number == 0 and not rec.eligible:
                    return loop.LoopEnd(status=StudyStatus.FAILED, reason=(
                        f"the default route failed ({rec.state.value}: {rec.error}); it defines "
                        "1.0x, so the study cannot rank routes"
                    ))
                if rec.state is CandidateState.COMPLETE and rec.extra.get("artifact_key"):
                    artifacts.setdefault(rec.extra["artifact_key"], rec.number)
                if not inflight:
                    loop._drift(gated, history, budget, sink)  # noqa: SLF001
            while end is None and held is None and len(inflight) < pool.width:
                if not history and inflight:
                    break  # the default route runs alone: it defines the golden outputs
                reason = _reason(budget, history, len(inflight), sink)
                if reason:
                    status = StudyStatus.STOPPED if "stopped" in reason else StudyStatus.FINISHED
                    end = loop.LoopEnd(status=status, reason=reason)
                    break
                proposal = strategy.ask(history, tuple(p for p, _ in inflight.values()))
                if proposal is None:
                    if not inflight:
                        end = _ended(history, space_size, search)
                    break
                if proposal.remeasure_of is not None:
                    held = proposal
                    break
                k = key(str(proposal.route))
                if k in seen:
                    skipped += 1
                    sink.skipped(proposal)
                    if skipped > loop.MAX_SKIPS:
                        end = loop.LoopEnd(status=StudyStatus.FINISHED, reason=(
                            f"strategy '{search}' kept proposing evaluated routes"
                        ))
                    continue
                seen.add(k)
                number, next_number = next_number, next_number + 1
                sink.started(CandidateRecord(
                    number=number, requested_route=str(proposal.route), state=CandidateState.RUNNING,
                    strategy_info=dict(proposal.info), started_at=time.time(), phase="start",
                ))
                inflight[number] = (proposal, submit(number, proposal))
            if not inflight:
                if held is not None:
                    loop._remeasure(gated, strategy, history, held, sink)  # noqa: SLF001
                    held = None
                    continue
                if end is not None:
                    return end
                continue
            wait([f for _, f in inflight.values()], timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(phases, sink, history)
    finally:
        _drain(phases, sink, history)
        pool.close()


def _drain(phases: queue.Queue[tuple[str, str]], sink: loop.Sink, history: list[CandidateRecord]) -> None:
    """Phase changes reported by worker threads, passed to the sink from this thread only (the
    store belongs to the coordinator's thread)."""
    while True:
        try:
            route, ph = phases.get_nowait()
        except queue.Empty:
            return
        with contextlib.suppress(Exception):
            sink.phase(route, ph, history)


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
