"""The loop with several candidates in flight: build ahead on one device, or Ray workers.

Same rules as :func:`gptuner_core.engine.loop.loop.run_loop` (it hands over here when a
:class:`ScaleOut` asks for more than one candidate at a time), plus:

* the strategy is asked with the proposals in flight (``Strategy.ask(history, pending)``), so no
  route is proposed twice; ``None`` with proposals in flight means "wait for a result";
* the default route (candidate 0) is measured first: it defines the golden outputs and 1.0x.
  A pool that can hold a measurement back (``pool.builds_before_default``: building ahead on one
  device) starts the next candidates' builds beside it; they measure after it was committed
  (``pool.default_committed``) and read it from the coordinator's history then. Any other pool
  runs it alone;
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
  measuring device (``CandidatePool.measuring``);
* once the default route has been built (its process waits for the device) or has a result,
  ``built(seen, settled, waiting)`` is called, and again whenever a result comes in or the
  candidates in flight change: ``seen`` is the history plus the results not committed yet (they
  finish out of proposal order; empty before the default's result), ``settled`` once the strategy
  has nothing more to propose and every candidate in flight has been built (it waits for the
  device or measures), ``waiting`` the ``(number, route)`` of those without a result yet (the
  default among them until its result). The re-validation rounds' processes can start loading on
  the cores the builds leave: the default's first while the others build, round 0 of every
  candidate once all are built, then the finalists' as screening ranks them
  (``engine.decide.finish.start_rounds_ahead``).
"""

from __future__ import annotations

import contextlib
import queue
import time
from collections import OrderedDict
from concurrent.futures import FIRST_COMPLETED
from concurrent.futures import Future
from concurrent.futures import wait
from typing import TYPE_CHECKING

from gptuner_core.engine.loop import loop_parts as loop
from gptuner_core.engine.process.turn import READY
from gptuner_core.engine.process.turn import REPORT
from gptuner_core.engine.process.turn import WAIT
from gptuner_core.engine.process.turn import WARMUP
from gptuner_core.engine.scale.scale_out import WorkerLost
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import StudyStatus


if TYPE_CHECKING:
    from collections.abc import Callable

    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.engine.scale.scale_out import CandidatePool
    from gptuner_core.records import ChildResult
    from gptuner_core.strategies import Proposal
    from gptuner_core.strategies import Strategy


class _Gated:
    """The evaluator, whose re-measurements hold the pool's measuring side."""

    def __init__(self, evaluator: Evaluator, pool: CandidatePool) -> None:
        self.evaluator, self.pool = evaluator, pool

    def evaluate(self, *args, **kw):  # type: ignore[no-untyped-def]
        return self.evaluator.evaluate(*args, **kw)

    def remeasure(self, record: CandidateRecord, purpose: str, scale: float = 1.0) -> ChildResult:
        remote = getattr(self.pool, "remeasure", None)  # Ray: on the worker that measured it
        if remote is not None:
            return remote(record, purpose, scale)
        with self.pool.measuring():
            return self.evaluator.remeasure(record, purpose, scale)


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
    built: Callable[[list[CandidateRecord], bool, list[tuple[int, str]]], None] | None = None,
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
    unannounced: list[CandidateRecord] = []  # started beside the default route, not yet stored
    skipped = 0
    phase_of: dict[str, str] = {}  # each route's last phase, as its process reported it
    asked_out = False  # the strategy's last answer was "nothing more" (or a budget ended it)
    hinted: tuple[int, tuple[int, ...], bool, int, bool] | None = None  # what ``built`` was last called with

    early = bool(getattr(pool, "builds_before_default", False))

    def submit(number: int, proposal: Proposal) -> Future[CandidateRecord]:
        route = str(proposal.route)
        # built beside the default route: it reads the default from this list once committed
        seen_history = history if early and not history else list(history)
        return pool.submit(proposal, number, seen_history, dict(artifacts),
                           lambda ph, route=route: phases.put((route, ph)))

    loop.drift(gated, history, budget, sink)
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
                rec = fut.result()
                if getattr(pool, "builds", True):  # a recording's answers stay as recorded
                    rec = late_duplicate(rec, artifacts, history)
                hook = getattr(pool, "committed", None)  # e.g. fetch a remote artifact
                rec = hook(rec, history) if hook is not None else rec
                history.append(rec if rec.number == 0 else rec.replace(samples_ms=()))
                sink.finished(rec, history)
                if rec.number == 0 and early:
                    pool.default_committed(rec)  # type: ignore[attr-defined]
                strategy.tell(rec)
                if rec.number == 0 and not rec.eligible:  # those built beside it are not stored
                    return loop.LoopEnd(status=StudyStatus.FAILED, reason=(
                        f"the default route failed ({rec.state.value}: {rec.error}); it defines "
                        "1.0x, so the study cannot rank routes"
                    ))
                if rec.state is CandidateState.COMPLETE and rec.extra.get("artifact_key"):
                    artifacts.setdefault(rec.extra["artifact_key"], rec.number)
                while unannounced:
                    sink.started(unannounced.pop(0))
                loop.drift(gated, history, budget, sink)  # holds the measuring side
            while end is None and held is None and len(inflight) < pool.width:
                if not history and inflight and not early:
                    break  # the default route runs alone: it defines the golden outputs
                reason = _reason(budget, history, len(inflight), sink)
                if reason:
                    status = StudyStatus.STOPPED if "stopped" in reason else StudyStatus.FINISHED
                    end = loop.LoopEnd(status=status, reason=reason)
                    break
                proposal = strategy.ask(history, tuple(p for p, _ in inflight.values()))
                asked_out = proposal is None
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
                started = CandidateRecord(
                    number=number, requested_route=str(proposal.route), state=CandidateState.RUNNING,
                    strategy_info=dict(proposal.info), started_at=time.time(), phase="start",
                )
                if number > 0 and not history:  # beside the default: stored once it was committed
                    unannounced.append(started)
                else:
                    sink.started(started)
                inflight[number] = (proposal, submit(number, proposal))
            _workers(pool, sink)
            if not inflight:
                if held is not None:
                    loop.remeasure(gated, strategy, history, held, sink)
                    held = None
                    continue
                if end is not None:
                    return end
                continue
            wait([f for _, f in inflight.values()], timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(phases, sink, history, phase_of)
            settled = (asked_out or end is not None) and all(
                fut.done() or phase_of.get(str(p.route)) in BUILT for p, fut in inflight.values())
            # results not committed yet count: they finish out of proposal order (the device
            # takes whoever is built first), and the finalists' rounds should not wait for that
            results = [*history, *(fut.result() for _, fut in inflight.values()
                                   if fut.done() and fut.exception() is None)]
            # the default built and waiting for its turn is enough: its rounds (and, once all are
            # built, round 0 of every candidate) can load while screening measures (issue 38)
            default_built = 0 in inflight and phase_of.get(str(inflight[0][0].route)) in BUILT
            now = (len(history), tuple(inflight), settled, len(results), default_built)
            if built is not None and now != hinted and (
                    (results and results[0].number == 0) or default_built):
                hinted = now
                built(results, settled, [(n, str(p.route)) for n, (p, fut) in inflight.items() if not fut.done()])
    finally:
        _drain(phases, sink, history, phase_of)
        pool.close()


#: a candidate's phases once its build has ended (its process waits for the device or measures)
BUILT = frozenset({WAIT, WARMUP, READY, "measure", "profile", REPORT})


def _workers(pool: CandidatePool, sink: loop.Sink) -> None:
    """Each worker's state to the sink, when both know how (``pool.workers()``,
    ``sink.workers(states)``: the Live page's worker table)."""
    states, report = getattr(pool, "workers", None), getattr(sink, "workers", None)
    if states is not None and report is not None:
        with contextlib.suppress(Exception):
            report(states())


def _drain(phases: queue.Queue[tuple[str, str]], sink: loop.Sink, history: list[CandidateRecord],
           phase_of: dict[str, str]) -> None:
    """Phase changes reported by worker threads, passed to the sink from this thread only (the
    store belongs to the coordinator's thread), and kept in ``phase_of``."""
    while True:
        try:
            route, ph = phases.get_nowait()
        except queue.Empty:
            return
        phase_of[route] = ph
        with contextlib.suppress(Exception):
            sink.phase(route, ph, history)


