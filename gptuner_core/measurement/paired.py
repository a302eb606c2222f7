"""Confidence intervals of a speed-up from per-round paired log ratios ``log(default / candidate)``.

One value per round: the default's per-process median divided by the candidate's per-process
median of the same round. Two intervals, both for the centre of the log ratio:

* ``"t"``: mean log ratio with a Student-t interval. Exact when per-process medians are log-normal
  (the usual shape on a quiet host), and it can decide after few rounds.
* ``"rank"``: Hodges-Lehmann estimate with the exact Wilcoxon signed-rank interval (order
  statistics of the Walsh averages). Distribution-free for any symmetric log ratio, which is what
  the difference of two identically distributed per-process medians is, regime switches included;
  a round whose two processes landed in different regimes (0.42 vs 0.84 ms) is one ranked
  outlier instead of a doubled variance. It needs more rounds: ``n`` rounds cannot reach a
  two-sided level beyond ``1 - 2 ** (1 - n)``; below that it gives no interval (flagged).

* ``"matched"``: the rank interval over the rounds whose two processes landed in the SAME
  regime. Regimes are told apart by one two-cluster split of the pooled per-process medians of
  both routes (:func:`matched_rounds`); the split is a symmetric function of the pooled values, so
  under "no difference" swapping the two routes inside a round changes neither the split nor
  which rounds are kept, and the signed-rank interval stays exact. A round where one process ran
  in the 0.42 ms regime and the other in the 0.84 ms one says nothing about the routes; dropping
  it keeps the power a 10 % effect needs (simulated: 180/200 winners vs 47 for the rank interval
  over all rounds and 23 for the t-interval, 30 % of processes in a 2x slower regime).

``"auto"`` (``round_pairs.choose_method``) takes ``"matched"`` when either route's own per-process
medians are bimodal (:mod:`gptuner_core.measurement.regimes`), else ``"t"``; ``"matched"`` falls
back to ``"rank"`` over all rounds when the pooled values show no two regimes or fewer than 2
rounds match (a large real effect, not a regime, then separates the pooled values).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from gptuner_core.errors import ConfigError


METHODS = ("t", "rank", "matched", "auto")
METHOD_TEXT = {
    "t": "paired per-round medians, t-interval on log ratio",
    "rank": "paired per-round medians, Wilcoxon signed-rank interval (Hodges-Lehmann)",
    "matched": (
        "paired per-round medians of same-regime rounds, Wilcoxon signed-rank interval "
        "(Hodges-Lehmann)"
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class LogInterval:
    """Centre and interval of the log speed-up; ``low``/``high`` are ``None`` without an interval."""

    centre: float
    low: float | None
    high: float | None
    method: str
    note: str = ""


@functools.lru_cache(maxsize=256)
def _signed_rank_cdf(n: int) -> tuple[float, ...]:
    """``P(W+ <= w)`` for w = 0 .. n(n+1)/2 under the null (exact, by polynomial product)."""
    probs = np.zeros(n * (n + 1) // 2 + 1)
    probs[0] = 1.0
    top = 0
    for i in range(1, n + 1):
        shifted = np.zeros_like(probs)
        shifted[i : top + i + 1] = probs[: top + 1]
        probs = (probs + shifted) / 2.0
        top += i
    return tuple(np.cumsum(probs).tolist())


def signed_rank_k(n: int, alpha: float) -> int:
    """Largest ``k`` with ``P(W+ <= k - 1) <= alpha / 2``; 0 when no interval reaches the level."""
    cdf = _signed_rank_cdf(n)
    k = 0
    while k < len(cdf) and cdf[k] <= alpha / 2.0:
        k += 1
    return k


@functools.lru_cache(maxsize=4096)
def _t_quantile(q: float, df: int) -> float:
    """Student's t quantile; cached: a study asks the same few (look's alpha, rounds) pairs at
    every look and contender, and ``scipy.stats.t.ppf`` was half of a re-validation's CPU time."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(q, df))


def _t_interval(logs: np.ndarray, alpha: float) -> LogInterval:
    centre = float(np.mean(logs))
    n = logs.size
    sd = float(np.std(logs, ddof=1))
    if sd == 0.0:
        return LogInterval(centre=centre, low=centre, high=centre, method="t")
    half = _t_quantile(1.0 - alpha / 2.0, n - 1) * sd / math.sqrt(n)
    return LogInterval(centre=centre, low=centre - half, high=centre + half, method="t")


def _rank_interval(logs: np.ndarray, alpha: float) -> LogInterval:
    n = logs.size
    i, j = np.triu_indices(n)
    walsh = np.sort((logs[i] + logs[j]) / 2.0)
    centre = float(np.median(walsh))
    k = signed_rank_k(n, alpha)
    if k < 1:
        note = (
            f"{n} rounds cannot reach a {(1 - alpha) * 100:.4g}% signed-rank interval "
            f"(the most is {(1 - 2.0 ** (1 - n)) * 100:.4g}%)"
        )
        return LogInterval(centre=centre, low=None, high=None, method="rank", note=note)
    return LogInterval(
        centre=centre, low=float(walsh[k - 1]), high=float(walsh[walsh.size - k]), method="rank"
    )


def matched_rounds(
    default_ms: Sequence[float] | np.ndarray, contender_ms: Sequence[float] | np.ndarray
) -> np.ndarray | None:
    """Mask of the rounds whose two processes fell in the same regime of the pooled split.

    ``None`` when the pooled per-process medians of both routes are not bimodal.
    """
    from gptuner_core.measurement.regimes import detect_regimes
    from gptuner_core.measurement.regimes import split_point

    d = np.asarray(default_ms, float)
    c = np.asarray(contender_ms, float)
    pooled = np.r_[d, c]
    if not detect_regimes(pooled).bimodal:
        return None
    cut = split_point(pooled)
    return (np.log(d) > cut) == (np.log(c) > cut)


def log_ratio_interval(logs: Sequence[float] | np.ndarray, alpha: float, method: str) -> LogInterval:
    """Interval of the log speed-up at two-sided level ``1 - alpha`` by ``"t"`` or ``"rank"``.

    Fewer than 2 rounds give the centre and no interval (``note`` says so), never an exception.
    """
    arr = np.asarray(logs, float)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)):
        msg = f"log ratios must be a non-empty 1-D sequence of finite numbers (got {arr.size})"
        raise ConfigError(msg)
    if not 0.0 < alpha < 1.0:
        msg = f"alpha must be strictly between 0 and 1 (got {alpha!r})"
        raise ConfigError(msg)
    if method not in ("t", "rank"):
        msg = f"interval method must be 't' or 'rank' (got {method!r})"
        raise ConfigError(msg)
    if arr.size < 2:
        return LogInterval(
            centre=float(arr[0]), low=None, high=None, method=method,
            note="a confidence interval needs >= 2 rounds (got 1)",
        )
    return _t_interval(arr, alpha) if method == "t" else _rank_interval(arr, alpha)
