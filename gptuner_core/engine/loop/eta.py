"""Budgets and ETAs that keep their word (issue 25, item 5): pure functions of what a study has
measured so far, used by the sink (progress ETA, the time budget's reserve) and unit-tested.

A time-budgeted study ends with re-validation, which measures the default and the top-K routes in
fresh processes, round after round. Screening that spends the whole budget leaves re-validation
either nothing (no verdict) or a round that overruns the budget by several measurements (quoted:
``--time-budget 5m`` ended at 349 s). So screening stops early enough to leave the first
``min_rounds`` rounds their time (:func:`reserve_s`), and the ETA counts them too (quoted: 1m04
announced, 5m41 taken).
"""

from __future__ import annotations

from collections.abc import Sequence


def per_route_s(measure_times_s: Sequence[float]) -> float | None:
    """One route's re-validation measurement, estimated by the screening measurements (a fresh
    process each, like a round's); ``None`` before any."""
    times = [t for t in measure_times_s if t and t > 0]
    return sum(times) / len(times) if times else None


def reserve_s(per_route: float | None, top_k: int, contenders: int, min_rounds: int) -> float:
    """Time kept for re-validation's first look: ``min_rounds`` rounds of the default and up to
    ``top_k`` contenders (0 without re-validation, or before any measurement)."""
    k = min(max(top_k, 0), max(contenders, 0))
    if not per_route or k == 0:
        return 0.0
    return min_rounds * (k + 1) * per_route


def eta_s(
    *, done: int, total: int | None, per_candidate: float | None, reserve: float,
    elapsed: float, time_budget: float | None,
) -> float | None:
    """Remaining time: the candidates still planned (capped by what the time budget leaves for
    screening), then re-validation's reserve. ``None`` while nothing is known."""
    if per_candidate is None or total is None:
        return None
    screening = max(total - done, 0) * per_candidate
    if time_budget is not None:
        screening = min(screening, max(time_budget - reserve - elapsed, 0.0))
    return screening + reserve
