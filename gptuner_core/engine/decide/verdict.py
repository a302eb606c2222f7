"""Pure verdict functions: the accuracy gate, the speed-up, and the one :class:`Winner` record.

Nothing here touches files, processes or the store; each function is unit-tested on its own.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import Verdict
from gptuner_core.records import Winner


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.accuracy import AccuracySettings

#: fewer samples than this give a point speed-up but no confidence interval
MIN_SAMPLES_FOR_CI = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    state: CandidateState
    accuracy: AccuracyResult
    error: str | None


def gate(
    outputs: Mapping[str, Any],
    golden: Mapping[str, Any],
    settings: AccuracySettings,
    reference_task_metric: float | None,
    *,
    task_value: float | None = None,
    task_error: str | None = None,
    task_details: Mapping[str, float] | None = None,
) -> GateResult:
    """Accuracy filters: losses of ``outputs`` vs ``golden`` plus the task metric the candidate's
    own process computed (``task_value``, or ``task_error`` when the metric failed there)."""
    from gptuner_core.accuracy.gate import judge

    result, passed, reason = judge(outputs, golden, settings, reference_task_metric,
                                   task_value=task_value, task_details=task_details)
    if task_error:
        return GateResult(state=CandidateState.ACCURACY_FAILED, accuracy=result, error=task_error)
    if passed:
        return GateResult(state=CandidateState.COMPLETE, accuracy=result, error=None)
    return GateResult(state=CandidateState.ACCURACY_FAILED, accuracy=result, error=reason)


def with_speedup(rec: CandidateRecord, default: CandidateRecord | None, *,
                 objective: str = "minimax") -> CandidateRecord:
    """Speed-up vs the default route with a bootstrap CI over the screening samples.

    Defined for any sample count: with fewer than two samples on either side there is a point
    estimate (ratio of medians) and no CI, flagged in ``extra["speedup_note"]`` — never an error.
    Measured at several shapes (``extra["shapes"]``), the speed-up is the study's ``objective``
    over the per-shape speed-ups (:func:`with_shape_speedup`).
    """
    from gptuner_core.measurement import speedup

    if rec.latency is None:
        return rec
    if rec.number == 0 or default is None:
        if rec.extra.get("shapes"):
            rec = rec.replace(extra={**rec.extra, "shapes": [
                {**sh, "speedup": 1.0, "speedup_ci": [1.0, 1.0]} for sh in rec.extra["shapes"]
            ], "shape_objective": objective})
        return rec.replace(speedup=1.0, speedup_ci=(1.0, 1.0))
    if default.latency is None or rec.latency.median_ms <= 0:
        return rec
    if rec.extra.get("shapes") and default.extra.get("shapes"):
        return with_shape_speedup(rec, default, objective)
    point = default.latency.median_ms / rec.latency.median_ms
    n = min(len(default.samples_ms), len(rec.samples_ms))
    if n < MIN_SAMPLES_FOR_CI:
        note = (
            f"no confidence interval: {len(rec.samples_ms)} latency sample(s) for this route, "
            f"{len(default.samples_ms)} for the default (at least {MIN_SAMPLES_FOR_CI} needed)"
        )
        return rec.replace(speedup=point, speedup_ci=None, extra={**rec.extra, "speedup_note": note})
    est = speedup(default.samples_ms, rec.samples_ms)
    return rec.replace(speedup=est.point, speedup_ci=est.ci)


def with_shape_speedup(rec: CandidateRecord, default: CandidateRecord, objective: str) -> CandidateRecord:
    """The speed-up at each measured shape (ratio of medians, bootstrap CI) and the overall
    one by ``objective`` (``minimax``/``weighted:W1,W2``), CI by a per-shape bootstrap."""
    from gptuner_core.measurement import ShapeObjective
    from gptuner_core.measurement import shape_speedup

    mine, base = rec.extra["shapes"], default.extra["shapes"]
    if [sh["label"] for sh in mine] != [sh["label"] for sh in base]:
        note = (f"no speed-up: measured at shapes {[sh['label'] for sh in mine]}, the default at "
                f"{[sh['label'] for sh in base]}")
        return rec.replace(speedup=None, speedup_ci=None, extra={**rec.extra, "speedup_note": note})
    goal = ShapeObjective.parse(objective, shapes=len(mine))
    est = shape_speedup(goal, [sh["samples_ms"] for sh in base], [sh["samples_ms"] for sh in mine])
    shapes = [
        {**sh, "speedup": point, "speedup_ci": list(ci) if ci else None}
        for sh, point, ci in zip(mine, est.per_shape, est.per_shape_ci, strict=True)
    ]
    extra = {**rec.extra, "shapes": shapes, "shape_objective": est.objective}
    if est.ci is None:
        extra["speedup_note"] = "no confidence interval: fewer than 2 latency samples at a shape"
    return rec.replace(speedup=est.point, speedup_ci=est.ci, extra=extra)


def per_shape_text(rec: CandidateRecord) -> str:
    """``"x:1x16 1.02x, x:64x16 1.31x (minimax)"`` for a record measured at several shapes."""
    shapes = rec.extra.get("shapes") or []
    if not shapes:
        return ""
    parts = [f"{sh['label']} {sh['speedup']:.3f}x" if sh.get("speedup") is not None
             else f"{sh['label']} ?" for sh in shapes]
    return f"{', '.join(parts)} ({rec.extra.get('shape_objective', 'minimax')})"


def contenders(history: Sequence[CandidateRecord]) -> list[CandidateRecord]:
    """Eligible non-default candidates that built their own artifact, fastest first (measured at
    several shapes: by the overall speed-up of the study's shape objective)."""
    eligible = [r for r in history if r.eligible and r.number != 0 and r.state is CandidateState.COMPLETE]
    if any(r.extra.get("shapes") for r in eligible):
        return sorted(eligible, key=lambda r: -(r.speedup or 0.0))
    return sorted(eligible, key=lambda r: r.latency.median_ms if r.latency else float("inf"))


def shapes_screening(best: CandidateRecord, min_effect: float) -> Winner:
    """``--revalidate-top-k 0`` with several measured shapes: the screening verdict of the
    overall objective's CI, each shape's speed-up in the message."""
    win = screening_only(best, min_effect)
    return dataclasses.replace(win, message=f"{win.message}; per shape: {per_shape_text(best)}",
                               method="per-shape screening bootstrap CI")


def default_only() -> Winner:
    return Winner(
        verdict=Verdict.DEFAULT_ONLY, number=0, speedup=1.0, ci=None,
        message="no eligible route other than the default; keeping the default route",
    )


def screening_only(best: CandidateRecord, min_effect: float) -> Winner:
    """``--revalidate-top-k 0``: screening numbers only. The best route is recommended only when
    its screening CI clears 1 + min_effect; a route slower than the default never is."""
    ci = best.speedup_ci
    speed = best.speedup or 0.0
    clears = ci is not None and ci[0] > 1.0 + min_effect
    tail = "not re-validated (--revalidate-top-k 0): screening numbers only"
    if clears:
        return Winner(
            verdict=Verdict.NOT_REVALIDATED, number=best.number, speedup=speed, ci=ci,
            best=best.number, best_speedup=speed, best_ci=ci, screening=True,
            method="screening bootstrap CI", message=(
                f"best route #{best.number} screened {speed:.3f}x [{ci[0]:.3f}, {ci[1]:.3f}]; {tail}"  # type: ignore[index]
            ),
        )
    return Winner(
        verdict=Verdict.NOT_REVALIDATED, number=0, speedup=1.0, ci=None,
        best=best.number, best_speedup=speed, best_ci=ci, screening=True,
        method="screening bootstrap CI", message=(
            f"keeping the default route: the best route #{best.number} screened {speed:.3f}x, "
            f"which does not clear {1 + min_effect:.3f}x; {tail}"
        ),
    )


def revalidation_failed(best: CandidateRecord, error: str) -> Winner:
    return Winner(
        verdict=Verdict.FAILED, number=0, speedup=1.0, ci=None, best=best.number,
        best_speedup=best.speedup, best_ci=best.speedup_ci, screening=True,
        message=(
            f"re-validation failed ({error}); keeping the default route "
            f"(best screening result: #{best.number}, {best.speedup or 0:.3f}x)"
        ),
    )


def from_sequential(result: Any, ties: Any = None) -> Winner:
    """The Winner for a :class:`gptuner_core.measurement.SequentialResult`.

    A winner's ``best`` is itself; otherwise ``best`` is the leading contender with ITS OWN
    re-validated estimate (a Winner once read ``"number": 5 ... "best": 2, "best_speedup":
    2.1089``: #5's speed-up under #2's number). ``ties`` (a :class:`~gptuner_core.engine.decide.ties.TieOrder`,
    the one the re-validation named by; ``None``: the lower number) words a tie between winners."""
    def estimate(number: int | None) -> Any:
        return result.contender(number).estimate if number is not None else None

    lead = result.winner if result.winner is not None else result.best
    est = estimate(lead)
    common = dict(
        message=result.message, best=lead if est is not None else None,
        best_speedup=est.point if est is not None else None,
        best_ci=est.ci if est is not None else None,
        rounds=result.rounds, method=result.method, projected_rounds=result.projected_rounds,
        confidence=result.plan.confidence, min_effect=result.plan.min_effect,
    )
    if result.winner is not None and est is not None:
        from gptuner_core.engine.decide.ties import TieOrder

        tied = tuple(result.tied)
        tie = (ties or TieOrder({})).reason(result.winner, tied, result.plan.min_effect)
        return Winner(verdict=Verdict.WINNER, number=result.winner, speedup=est.point, ci=est.ci,
                      tied=tied, tie=tie, **common)
    kind = Verdict.INCONCLUSIVE if result.verdict.value == "inconclusive" else Verdict.NOT_FASTER
    return Winner(verdict=kind, number=result.default, speedup=1.0, ci=None, **common)


#: an undecided verdict is called "too busy to decide" when other programs ran beside more than
#: this share of the measurements (measurement health's busy-CPU warning threshold)
BUSY_SHARE = 0.2


def too_busy(winner: Winner, history: Sequence[CandidateRecord]) -> Winner:
    """``winner`` with ``busy_share`` set when it is undecided and the machine was busy: other
    programs ran beside more than :data:`BUSY_SHARE` of the candidates' measurements (telemetry
    ``busy``). The verdict line then says the machine was too busy to decide, and what to do,
    before the round count (issue 41: "about 1505 more rounds" was the wrong advice there)."""
    if winner.verdict is not Verdict.INCONCLUSIVE:
        return winner
    share = busy_share([bool(r.telemetry.get("busy")) for r in history if r.latency is not None])
    return dataclasses.replace(winner, busy_share=share) if share is not None else winner


def busy_share(busy: Sequence[bool]) -> float | None:
    """The share of measurements other programs ran beside (``busy``: one flag each), rounded,
    when it is over :data:`BUSY_SHARE`; ``None`` when it is not, or nothing was measured. The
    one rule for a study's verdict (:func:`too_busy`) and a gate's (``bundle.gate.with_busy``)."""
    if not busy:
        return None
    share = sum(busy) / len(busy)
    return round(share, 3) if share > BUSY_SHARE else None
