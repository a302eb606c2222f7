"""Paired intervals over interleaved rounds: a contender against the default, against the leading
contender (outclassed), and the finalists the rounds cannot tell apart (a tie).

Each round measures every undecided route once in a fresh process; two routes are compared on
the rounds that measured both, the log ratio of their per-process medians, so drift shared by a
round cancels. The interval's method follows both routes' regimes (:func:`choose_method`).
Used by :func:`gptuner_core.measurement.sequential.revalidate_sequential`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gptuner_core.measurement.paired import LogInterval
from gptuner_core.measurement.paired import log_ratio_interval
from gptuner_core.measurement.paired import matched_rounds
from gptuner_core.measurement.regimes import Regimes
from gptuner_core.measurement.regimes import detect_regimes


if TYPE_CHECKING:
    from gptuner_core.measurement.stats import SpeedupEstimate
    from gptuner_core.measurement.verdicts import SequentialPlan


def choose_method(plan_method: str, default_regimes: Regimes, regimes: Regimes) -> str:
    """``"matched"`` under ``"auto"`` when either route's per-process medians are bimodal."""
    if plan_method != "auto":
        return plan_method
    return "matched" if (default_regimes.bimodal or regimes.bimodal) else "t"


def _interval(d: np.ndarray, c: np.ndarray, alpha: float, method: str) -> LogInterval:
    """The look's interval. A rank interval that ``n`` rounds cannot reach at this level (``n``
    rounds reach at most ``1 - 2 ** (1 - n)``) is replaced by the t-interval over every round,
    which can: a verdict never stalls on a method that cannot decide (the note says so)."""
    logs = np.log(d / c)
    mask = None
    if method == "matched":
        mask = matched_rounds(d, c)
        if mask is not None and int(mask.sum()) >= 2:
            iv = dataclasses.replace(log_ratio_interval(logs[mask], alpha, "rank"), method="matched")
        else:
            iv = log_ratio_interval(logs, alpha, "rank")
    else:
        iv = log_ratio_interval(logs, alpha, method)
    if iv.low is None and method != "t" and logs.size >= 2:
        used = int(mask.sum()) if mask is not None else logs.size
        note = (f"{used} rounds are too few for a distribution-free interval at this level; "
                f"t-interval over all {logs.size} rounds")
        return dataclasses.replace(log_ratio_interval(logs, alpha, "t"), note=note)
    return iv


def _pairs(medians: dict[int, list[float | None]], ref: int, c: int) -> list[tuple[float, float]]:
    """The (``ref``, ``c``) medians of the rounds that measured both."""
    return [(a, b) for a, b in zip(medians[ref], medians[c], strict=True)
            if a is not None and b is not None]


def paired_interval(
    medians: dict[int, list[float | None]], ref: int, c: int, alpha: float, plan_method: str
) -> tuple[LogInterval, Regimes]:
    """The speed-up interval of ``c`` over ``ref`` (log scale) from the rounds that measured
    both, its method chosen from both routes' regimes; with ``c``'s regimes."""
    pairs = _pairs(medians, ref, c)
    r_reg = detect_regimes([p[0] for p in pairs], route=ref)
    c_reg = detect_regimes([p[1] for p in pairs], route=c)
    method = choose_method(plan_method, r_reg, c_reg)
    ref_ms, c_ms = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    return _interval(ref_ms, c_ms, alpha, method), c_reg


def slower_than_leader(
    medians: dict[int, list[float | None]],
    cands: Sequence[int],
    status: dict[int, str],
    last: dict[int, tuple[LogInterval, float, str, Regimes]],
    alpha: float,
    plan_method: str,
) -> list[int]:
    """Undecided contenders significantly slower than the leading contender (the one with the
    highest speed-up estimate at this look): they cannot be the best route, so measuring them
    further only costs processes. Each is paired with the leader over the rounds both were
    measured in, so the default's own process noise cancels; the interval is at the look's
    level. Dropping a contender never adds a winner, so the false-winner bound is untouched."""
    scored = [c for c in cands if c in last and status[c] != "failed"]
    if len(scored) < 2:
        return []
    leader = max(scored, key=lambda c: (last[c][0].centre, -c))
    out = []
    for c in scored:
        if c == leader or status[c] != "inconclusive":
            continue
        if len(_pairs(medians, leader, c)) < 2:
            continue
        iv, _ = paired_interval(medians, leader, c, alpha, plan_method)  # c over the leader
        if iv.high is not None and iv.high < 0.0:
            out.append(c)
    return out


def separated(medians: dict[int, list[float | None]], leader: int, c: int, alpha: float,
              plan: SequentialPlan) -> bool:
    """Whether ``leader`` is faster than ``c`` as a winner is faster than the default: the
    leader-over-``c`` interval, paired round by round at the level ``alpha``, lies above
    ``1 + min_effect``. Otherwise (within +-min_effect, or undecided) the two may tie."""
    iv, _ = paired_interval(medians, c, leader, alpha, plan.method)  # the leader over c
    return iv.low is not None and iv.low > math.log(1.0 + plan.min_effect)


def tie_group(
    medians: dict[int, list[float | None]],
    winners: Sequence[int],
    estimates: dict[int, SpeedupEstimate | None],
    alpha: float,
    plan: SequentialPlan,
) -> list[int]:
    """The winners the rounds do not separate from the leading one (highest point speed-up),
    the leader included (:func:`separated`). Which of a tie has the larger point estimate is
    timing noise: the caller names one by a fixed order instead. A finalist significantly
    faster than every other is a group of one, so it is still named for its speed."""
    leader = max(winners, key=lambda c: (estimates[c].point if estimates[c] else 0.0, -c))
    return [leader, *(c for c in winners if c != leader
                      and not separated(medians, leader, c, alpha, plan))]
