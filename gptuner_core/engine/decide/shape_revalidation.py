"""Re-validation of a study measured at several shapes: the verdict per shape and overall.

Each round re-measures a route once in a fresh process, at every ``--measure-shapes`` profile
(the child measures them in turn), and the same process's per-shape medians feed every shape's
evidence. How the overall verdict follows the study's ``--shape-objective``:

* ``weighted:W1,W2``: the unit of evidence is the per-process time of the traffic mix,
  ``sum_i W_i median_i``; one sequential re-validation on it decides (its error control as is).
* ``minimax``: one sequential re-validation per shape on that shape's per-process medians (the
  same processes: a measurement made for one shape's rounds is reused by the others). A route is
  the winner only when it is a winner at *every* shape (an intersection-union test: the chance of
  a false overall winner is at most that of one shape's test), and its overall speed-up is the
  worst shape's, with the interval ``[min low_i, min high_i]``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from gptuner_core.engine.decide import verdict
from gptuner_core.engine.evaluate.rounds import measure_round
from gptuner_core.errors import BackendError
from gptuner_core.records import Verdict
from gptuner_core.records import Winner


if TYPE_CHECKING:
    from collections.abc import Callable

    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.decide.ties import TieOrder
    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.measurement import SequentialPlan
    from gptuner_core.measurement import SequentialResult
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import ShapeLatency


def revalidate_shapes(
    cfg: StudyConfig, evaluator: Evaluator, top: list[CandidateRecord],
    history: list[CandidateRecord], plan: SequentialPlan,
    on_round: Callable[[int, int], None] | None = None,
) -> tuple[Winner, dict[str, Any]]:
    """The Winner of a several-shape study and the ``revalidation`` event's payload."""
    from gptuner_core.measurement import ShapeObjective
    from gptuner_core.measurement import revalidate_sequential

    by_number = {r.number: r for r in history}
    labels = [sh["label"] for sh in history[0].extra.get("shapes") or ()]
    goal = ShapeObjective.parse(cfg.shape_objective, shapes=len(labels))
    cache: dict[tuple[int, int], tuple[ShapeLatency, ...]] = {}

    def fresh(number: int, round_index: int) -> tuple[ShapeLatency, ...]:
        key = (number, round_index)
        if key not in cache:
            purpose = f"revalidation/r{round_index}_{number:05d}"
            res = measure_round(evaluator, by_number[number], purpose)
            if not res.ok or [s.label for s in res.shapes] != labels:
                msg = (f"re-measurement of candidate #{number} failed ({res.error or 'not measured at every shape'}; "
                       f"see {purpose}/log.txt)")
                raise BackendError(msg)
            cache[key] = res.shapes
        return cache[key]

    from gptuner_core.engine.decide.ties import TieOrder

    ties = TieOrder.of(history)  # the order that names one of tied finalists, both objectives
    numbers = [r.number for r in top]
    rounds_cb = (lambda done, total, _undecided: on_round(done, total)) if on_round else None
    if goal.kind == "weighted":
        w = np.asarray(goal.weights, float)

        def mix(number: int, round_index: int) -> list[float]:
            medians = np.array([np.median(s.samples_ms) for s in fresh(number, round_index)])
            return [float(medians @ w)]

        result = revalidate_sequential(numbers, 0, mix, plan, seed=cfg.seed, on_round=rounds_cb,
                                       prefer=ties.key)
        win = verdict.from_sequential(result, ties)
        text = f"traffic mix {goal.text()} over {', '.join(labels)}"
        return (dataclasses.replace(win, message=f"{win.message} ({text})"),
                {"objective": goal.text(), "shapes": labels, "mix": result.to_json()})
    per_shape: list[SequentialResult] = []
    for i in range(len(labels)):
        def one(number: int, round_index: int, i: int = i) -> tuple[float, ...]:
            return fresh(number, round_index)[i].samples_ms

        per_shape.append(revalidate_sequential(
            numbers, 0, one, dataclasses.replace(plan, stop_at_winner=False), seed=cfg.seed,
            on_round=rounds_cb, prefer=ties.key,
        ))
    payload = {"objective": goal.text(), "shapes": labels,
               "per_shape": [r.to_json() for r in per_shape]}
    return minimax_winner(numbers, labels, per_shape, ties), payload


def minimax_winner(numbers: list[int], labels: list[str], per_shape: list[SequentialResult],
                   ties: TieOrder | None = None) -> Winner:
    """A winner at every shape wins (the one whose worst shape is fastest); else not faster
    when every contender is shown not faster (or failed) at some shape; else inconclusive.

    Winners at every shape that the rounds separate at no shape from the fastest (each shape's
    tie group holds both) tie: the route named among them is the first in ``ties``'s order
    (issue 38: the larger noisy minimax point named either twin), and the verdict says so."""
    from gptuner_core.engine.decide.ties import TieOrder

    def worst(c: int) -> tuple[float, tuple[float, float] | None]:
        ests = [r.contender(c).estimate for r in per_shape]
        point = min(e.point for e in ests if e is not None) if all(ests) else 0.0
        cis = [e.ci for e in ests if e is not None]
        ci = (min(a for a, _ in cis), min(b for _, b in cis)) if len(cis) == len(ests) and all(cis) else None
        return point, ci

    def detail(c: int) -> str:
        parts = []
        for label, r in zip(labels, per_shape, strict=True):
            cv = r.contender(c)
            est = f" {cv.estimate.point:.3f}x" if cv.estimate is not None else ""
            parts.append(f"{label}{est} {cv.status}")
        return ", ".join(parts)

    rounds = max(r.rounds for r in per_shape)
    method = f"per-shape {per_shape[0].method}; winner only if a winner at every shape (minimax)"
    winners = [c for c in numbers if all(r.contender(c).status == "winner" for r in per_shape)]
    scored = [c for c in numbers if all(r.contender(c).estimate is not None for r in per_shape)]
    best = max(scored, key=lambda c: (worst(c)[0], -c)) if scored else None
    best_point, best_ci = worst(best) if best is not None else (None, None)
    common = dict(best=best, best_speedup=best_point, best_ci=best_ci, rounds=rounds, method=method)
    if winners:
        fastest = max(winners, key=lambda c: (worst(c)[0], -c))
        groups = [{r.winner, *r.tied} for r in per_shape]
        group = [c for c in winners if c == fastest or all({c, fastest} <= g for g in groups)]
        order = ties or TieOrder({})
        chosen = min(group, key=lambda c: (order.key(c), c))
        tied = tuple(sorted(c for c in group if c != chosen))
        tie = order.reason(chosen, tied, per_shape[0].plan.min_effect)
        point, ci = worst(chosen)
        return Winner(verdict=Verdict.WINNER, number=chosen, speedup=point, ci=ci, message=(
            f"route #{chosen} is faster at every shape ({detail(chosen)}); minimax {point:.3f}x"
        ), tied=tied, tie=tie, **{**common, "best": chosen, "best_speedup": point, "best_ci": ci})
    shown_slower = all(
        any(r.contender(c).status in ("not_faster", "failed") for r in per_shape) for c in numbers
    )
    kind = Verdict.NOT_FASTER if shown_slower else Verdict.INCONCLUSIVE
    where = f" (best #{best}: {detail(best)})" if best is not None else ""
    word = "not faster at some shape" if shown_slower else "not shown faster at every shape"
    return Winner(verdict=kind, number=0, speedup=1.0, ci=None, message=(
        f"keeping the default route: no route is a winner at every shape, each is {word}{where}"
    ), projected_rounds=max((r.projected_rounds or 0 for r in per_shape), default=0) or None, **common)


__all__ = ["minimax_winner", "revalidate_shapes"]
