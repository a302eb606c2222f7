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

``scale_out`` (:class:`gptuner_core.engine.parallel.ScaleOut`) asking for more than one candidate
at a time (build ahead, Ray workers) hands over to :func:`gptuner_core.engine.parallel.run_parallel`:
the same rules with candidates in flight.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Protocol

from gptuner_core.engine import verdict
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import StudyStatus


if TYPE_CHECKING:
    from collections.abc import Callable

    from gptuner_core.engine.evaluator import Evaluator
    from gptuner_core.engine.parallel import ScaleOut
    from gptuner_core.records import ChildResult
    from gptuner_core.strategies import Proposal
    from gptuner_core.strategies import Strategy

MAX_SKIPS = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    max_candidates: int | None = None
    time_budget_s: float | None = None
    target_speedup: float | None = None
    drift_every: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopEnd:
    status: StudyStatus
    reason: str
    exhausted: bool = False


class Sink(Protocol):
    """Where the loop reports: the tuner writes to the store, a simulation keeps a trace."""

    def started(self, rec: CandidateRecord) -> None: ...
    def finished(self, rec: CandidateRecord, history: list[CandidateRecord]) -> None: ...
    def replaced(self, rec: CandidateRecord) -> None: ...
    def skipped(self, proposal: Proposal) -> None: ...
    def phase(self, route: str, phase: str, history: list[CandidateRecord]) -> None: ...
    def baseline(self, after: int, result: ChildResult) -> None:
        """A drift re-measurement of the default route (failed ones too: not retried)."""
    def baselines_done(self) -> set[int]: ...
    def stop_requested(self) -> bool: ...
    def elapsed_s(self) -> float: ...


def budget_reason(budget: Budget, history: list[CandidateRecord], sink: Sink) -> str:
    if sink.stop_requested():
        return "stopped on request"
    if budget.max_candidates is not None and len(history) >= budget.max_candidates:
        return f"candidate budget reached ({budget.max_candidates})"
    if budget.time_budget_s is not None and sink.elapsed_s() >= budget.time_budget_s:
        return f"time budget reached ({budget.time_budget_s:g} s)"
    if budget.target_speedup is not None:
        best = max((r.speedup or 0.0 for r in history if r.eligible), default=0.0)
        if best >= budget.target_speedup:
            return f"target speed-up {budget.target_speedup:g}x reached ({best:.3f}x)"
    return ""


def drift_point(history: list[CandidateRecord], every: int) -> int | None:
    """The number of the candidate after which the latest due drift re-measurement falls."""
    if not every or len(history) < 2:
        return None
    due = ((len(history) - 1) // every) * every
    return history[due].number if due >= 1 else None


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
) -> LoopEnd:
    """Run until the strategy is done or a budget is reached; ``history`` grows in place."""
    if scale_out is not None:
        from gptuner_core.engine.parallel import make_pool
        from gptuner_core.engine.parallel import run_parallel

        pool = make_pool(scale_out, evaluator)
        if pool is not None:
            return run_parallel(
                strategy=strategy, evaluator=evaluator, pool=pool, history=history, key=key,
                budget=budget, sink=sink, space_size=space_size, search=search,
            )
    seen = {key(r.requested_route) for r in history}
    artifacts = {
        r.extra["artifact_key"]: r.number
        for r in history
        if r.extra.get("artifact_key") and r.state is CandidateState.COMPLETE
    }
    skipped = 0
    _drift(evaluator, history, budget, sink)  # a drift point cut by a kill is redone first
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
            _remeasure(evaluator, strategy, history, proposal, sink)
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
        _drift(evaluator, history, budget, sink)


def _drift(evaluator: Evaluator, history: list[CandidateRecord], budget: Budget, sink: Sink) -> None:
    after = drift_point(history, budget.drift_every)
    if after is None or after in sink.baselines_done():
        return
    sink.phase("(default route)", "drift", history)
    sink.baseline(after, evaluator.remeasure(history[0], f"baselines/{after:05d}"))


def _remeasure(
    evaluator: Evaluator, strategy: Strategy, history: list[CandidateRecord],
    proposal: Proposal, sink: Sink,
) -> None:
    """A racing strategy's longer measurement of a contender; updates that candidate in place."""
    number = proposal.remeasure_of
    idx = next((i for i, r in enumerate(history) if r.number == number), None)
    if idx is None or history[idx].requested_route != str(proposal.route):
        sink.skipped(proposal)
        return
    rec = history[idx]
    if not rec.eligible:
        strategy.tell(rec)
        return
    rung = proposal.info.get("race_rung", 1)
    sink.phase(rec.requested_route, "measure", history)
    res = evaluator.remeasure(rec, f"candidates/{rec.number:05d}/rung{rung}", proposal.measure_scale)
    if res.ok and res.latency is not None:
        rec = rec.replace(
            latency=res.latency, samples_ms=res.samples_ms, telemetry=res.telemetry,
            strategy_info={**rec.strategy_info, **proposal.info},
        )
        rec = verdict.with_speedup(rec, history[0] if rec.number != 0 else None)
        sink.replaced(rec)
    history[idx] = rec if rec.number == 0 else rec.replace(samples_ms=())
    strategy.tell(history[idx])
