"""The parts of the tuning loop shared by the one-at-a-time loop (``engine.loop.loop``) and the loop
with candidates in flight (``engine.scale.parallel``): budgets, the sink protocol, the drift sentinel
and a racing strategy's re-measurement. The rules are stated in ``engine.loop.loop``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Protocol

from gptuner_core.engine.decide import verdict
from gptuner_core.records import StudyStatus


if TYPE_CHECKING:
    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.records import CandidateRecord
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


class QuietSink:
    """A :class:`Sink` that keeps nothing and never stops the loop (simulations build on it)."""

    def started(self, rec: CandidateRecord) -> None:
        pass

    def finished(self, rec: CandidateRecord, history: list[CandidateRecord]) -> None:
        pass

    def replaced(self, rec: CandidateRecord) -> None:
        pass

    def skipped(self, proposal: Proposal) -> None:
        pass

    def phase(self, route: str, phase: str, history: list[CandidateRecord]) -> None:
        pass

    def baseline(self, after: int, result: ChildResult) -> None:
        pass

    def baselines_done(self) -> set[int]:
        return set()

    def stop_requested(self) -> bool:
        return False

    def elapsed_s(self) -> float:
        return 0.0


def budget_reason(budget: Budget, history: list[CandidateRecord], sink: Sink) -> str:
    if sink.stop_requested():
        return "stopped on request"
    if budget.max_candidates is not None and len(history) >= budget.max_candidates:
        return f"candidate budget reached ({budget.max_candidates})"
    # screening leaves re-validation's first rounds their time (a sink's ``reserve_s``, issue 25)
    reserve = sink.reserve_s() if hasattr(sink, "reserve_s") else 0.0
    if budget.time_budget_s is not None and sink.elapsed_s() + reserve >= budget.time_budget_s:
        kept = f"; {reserve:.0f} s kept for re-validation" if reserve >= 0.5 else ""
        return f"time budget reached ({budget.time_budget_s:g} s{kept})"
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


def drift(evaluator: Evaluator, history: list[CandidateRecord], budget: Budget, sink: Sink) -> None:
    after = drift_point(history, budget.drift_every)
    if after is None or after in sink.baselines_done():
        return
    sink.phase("(default route)", "drift", history)
    sink.baseline(after, evaluator.remeasure(history[0], f"baselines/{after:05d}"))


def remeasure(
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
        if res.shapes:
            rec = rec.replace(extra={**rec.extra, "shapes": [sh.to_json() for sh in res.shapes]})
        rec = verdict.with_speedup(rec, history[0] if rec.number != 0 else None,
                                   objective=str(rec.extra.get("shape_objective", "minimax")))
        sink.replaced(rec)
    history[idx] = rec if rec.number == 0 else rec.replace(samples_ms=())
    strategy.tell(history[idx])
