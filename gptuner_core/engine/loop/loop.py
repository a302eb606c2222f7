"""The one tuning loop: ask the strategy, evaluate, tell — for real and recorded runs alike.

Rules (the same whichever evaluator answers):

* a proposal whose route key was already evaluated is skipped, never re-built (a strategy that
  keeps proposing evaluated routes is stopped after :data:`MAX_SKIPS` of them);
* ``Proposal.remeasure_of`` re-measures that candidate (``measure_scale``) and replaces its
  record; it is not a build and does not count against ``max_candidates``;
* budgets are checked before every proposal: a stop request, ``max_candidates`` (the default
  route included), ``time_budget_s`` (over the whole study, earlier runs of it included) and
  ``target_speedup``;
* a default route that fails ends the study (it defines 1.0x);
* every ``drift_every`` candidates the default route is re-measured (drift sentinel); a drift
  point cut by a kill is redone when the study continues.

``scale_out`` (:class:`gptuner_core.engine.scale.scale_out.ScaleOut`) asking for more than one candidate
at a time (build ahead, Ray workers) hands over to :func:`gptuner_core.engine.scale.parallel.run_parallel`:
the same rules with candidates in flight.
"""

from __future__ import annotations

import contextlib
import functools
import time
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.engine.loop.loop_parts import MAX_SKIPS
from gptuner_core.engine.loop.loop_parts import Budget
from gptuner_core.engine.loop.loop_parts import LoopEnd
from gptuner_core.engine.loop.loop_parts import Sink
from gptuner_core.engine.loop.loop_parts import budget_reason
from gptuner_core.engine.loop.loop_parts import drift
from gptuner_core.engine.loop.loop_parts import drift_point
from gptuner_core.engine.loop.loop_parts import remeasure
from gptuner_core.errors import DeviceWaitEnded
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import StudyStatus


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterator

    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.engine.scale.scale_out import ScaleOut
    from gptuner_core.strategies import Strategy

@contextlib.contextmanager
def held(device_lock: DeviceLock | None, sink: Sink) -> Iterator[None]:
    """The measuring device held for one candidate (its build uses the device too on CPU).

    Waiting is a state, not tuning time: a sink with ``waiting(w)`` is told while another study
    holds the device, one with ``waited(seconds)`` gets the time spent (kept out of the time
    budget), ``sink.device_wait_s`` bounds one wait, and a stop request ends it at once. Both
    ends raise :class:`~gptuner_core.errors.DeviceWaitEnded`, which :func:`run_loop` turns into
    the study's end (stopped, or failed naming the holder): never "finished" because it waited.
    """
    if device_lock is None:
        yield
        return
    limit = getattr(sink, "device_wait_s", None)
    start = time.monotonic()
    try:
        ok = device_lock.acquire(limit, on_wait=getattr(sink, "waiting", None),
                                 should_stop=getattr(sink, "stop_requested", None))
    finally:
        note = getattr(sink, "waited", None)
        if note is not None:
            note(time.monotonic() - start)
    if not ok:
        who = "; ".join(f"{d} held by study {h.study} (pid {h.pid})" for d, h in device_lock.holders().items())
        if limit is None or time.monotonic() - start < limit:
            msg = f"stopped on request while waiting for the device ({who or 'freed just now'})"
            raise DeviceWaitEnded(msg, stopped=True)
        msg = (f"gave up waiting for the measuring device after --device-wait {limit:g} s "
               f"({who or 'freed just now'})")
        raise DeviceWaitEnded(msg)
    try:
        yield
    finally:
        device_lock.release()


def _device_wait_ends_study(loop: Callable[..., LoopEnd]) -> Callable[..., LoopEnd]:
    """A device wait that ends (stopped, or given up) ends the study instead of raising."""

    @functools.wraps(loop)
    def run(**kwargs: Any) -> LoopEnd:
        try:
            return loop(**kwargs)
        except DeviceWaitEnded as exc:
            return LoopEnd(status=StudyStatus.STOPPED if exc.stopped else StudyStatus.FAILED, reason=str(exc))

    return run


@_device_wait_ends_study
def run_loop(
    *,
    strategy: Strategy,
    evaluator: Evaluator,
    history: list[CandidateRecord],
    key: Callable[[str], str],
    budget: Budget,
    sink: Sink,
    space_size: int,
    search: str,
    scale_out: ScaleOut | None = None,
    device_lock: DeviceLock | None = None,
    built: Callable[[list[CandidateRecord], bool, list[tuple[int, str]]], None] | None = None,
) -> LoopEnd:
    """Run until the strategy is done or a budget is reached; ``history`` grows in place.
    Several candidates in flight (``scale_out``): ``built(seen, settled, waiting)`` once the
    default route has a result and as results come in (``seen``: committed or not), ``settled``
    once every candidate in flight has been built and no more are proposed, ``waiting``: those
    without a result (``engine.scale.parallel``)."""
    if scale_out is not None:
        from gptuner_core.engine.scale.parallel import run_parallel
        from gptuner_core.engine.scale.pools import make_pool

        pool = make_pool(scale_out, evaluator, device_lock=device_lock)
        if pool is not None:
            return run_parallel(
                strategy=strategy, evaluator=evaluator, pool=pool, history=history, key=key,
                budget=budget, sink=sink, space_size=space_size, search=search, built=built,
            )
    seen = {key(r.requested_route) for r in history}
    artifacts = {
        r.extra["artifact_key"]: r.number
        for r in history
        if r.extra.get("artifact_key") and r.state is CandidateState.COMPLETE
    }
    skipped = 0
    if drift_due(history, budget, sink):  # a drift point cut by a kill is redone first
        with held(device_lock, sink):
            drift(evaluator, history, budget, sink)
    while True:
        reason = budget_reason(budget, history, sink)
        if reason:
            status = StudyStatus.STOPPED if "stopped" in reason else StudyStatus.FINISHED
            return LoopEnd(status=status, reason=reason)
        proposal = strategy.ask(history)
        if proposal is None:
            if not history:
                return LoopEnd(status=StudyStatus.FINISHED, reason="no route proposed", exhausted=True)
            if len(history) >= space_size:
                return LoopEnd(status=StudyStatus.FINISHED, reason="search space exhausted", exhausted=True)
            return LoopEnd(status=StudyStatus.FINISHED, exhausted=True, reason=(
                f"strategy '{search}' finished after {len(history)} of {space_size} routes"
            ))
        if proposal.remeasure_of is not None:
            with held(device_lock, sink):
                remeasure(evaluator, strategy, history, proposal, sink)
            continue
        k = key(str(proposal.route))
        if k in seen:
            skipped += 1
            sink.skipped(proposal)
            if skipped > MAX_SKIPS:
                return LoopEnd(status=StudyStatus.FINISHED, reason=(
                    f"strategy '{search}' kept proposing evaluated routes"
                ))
            continue
        seen.add(k)
        number = (history[-1].number + 1) if history else 0
        route = str(proposal.route)
        with held(device_lock, sink):  # started once the device is ours: waiting is no candidate
            sink.started(CandidateRecord(
                number=number, requested_route=route, state=CandidateState.RUNNING,
                strategy_info=dict(proposal.info), started_at=time.time(), phase="start",
            ))
            rec = evaluator.evaluate(
                proposal, number, history, artifacts,
                lambda ph, route=route: sink.phase(route, ph, history),
            )
        # raw samples stay in the store; only the default's are kept (speed-ups need them)
        history.append(rec if rec.number == 0 else rec.replace(samples_ms=()))
        sink.finished(rec, history)
        strategy.tell(rec)
        if rec.number == 0 and not rec.eligible:
            return LoopEnd(status=StudyStatus.FAILED, reason=(
                f"the default route failed ({rec.state.value}: {rec.error}); it defines 1.0x, "
                "so the study cannot rank routes"
            ))
        if rec.state is CandidateState.COMPLETE and rec.extra.get("artifact_key"):
            artifacts.setdefault(rec.extra["artifact_key"], rec.number)
        if drift_due(history, budget, sink):
            with held(device_lock, sink):
                drift(evaluator, history, budget, sink)


def drift_due(history: list[CandidateRecord], budget: Budget, sink: Sink) -> bool:
    """A drift re-measurement is due now (only then is the device taken for it)."""
    after = drift_point(history, budget.drift_every)
    return after is not None and after not in sink.baselines_done()


__all__ = ["MAX_SKIPS", "Budget", "LoopEnd", "Sink", "budget_reason", "drift_point", "run_loop"]
