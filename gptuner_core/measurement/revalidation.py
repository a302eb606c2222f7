"""Interleaved re-validation of the top-K candidates before a winner is declared.

The best of N noisy measurements is biased low, so the screening pass only nominates. Here the
nominees and the default route are measured again, each measurement in a FRESH process, in a
randomized interleaved order: every round runs every route once, in a new random order, with the
default in every round. The engine supplies ``measure_fresh(number, round_index) -> samples_ms``.

Unit of analysis: the per-round median, paired by round. Samples inside one process are not
independent draws: on our 2-core hosts the spread *between* processes (CV 7-12 % of the median)
is several times the spread inside a process (2-6 %), coming from CPU frequency, memory layout and
neighbours that stay fixed for a process's life. Pooling thousands of raw samples would treat them
as independent and give intervals far too narrow: the very false winners we are here to stop.
So each round contributes one number per route, and each candidate's round median is divided by the
default's median *of the same round* (which cancels slow drift shared by the round).

Interval: ``exp`` of the t-interval of the mean log-ratio (``scipy.stats.ttest_1samp``). With 3-10
rounds a bootstrap percentile interval under-covers badly and an order-statistic interval cannot
reach 95 % below 6 values; the t-interval on logs is exact for log-normal noise and close for
moderately skewed noise. Because the best of K candidates is tested, each candidate's interval is
computed at the Bonferroni level ``1 - (1 - confidence) / K``, so the chance of a false winner
over the whole study stays within ``(1 - confidence) / 2``.

A winner is declared only when its interval's lower bound exceeds ``1 + min_effect``; among
several such candidates the one with the highest point speed-up wins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from gptuner_core.errors import ConfigError
from gptuner_core.measurement.stats import SpeedupEstimate
from gptuner_core.measurement.stats import too_few


def _validate(candidates: Sequence[int], default: int, rounds: int) -> list[int]:
    cands = list(candidates)
    if not cands:
        msg = "re-validation needs at least one candidate besides the default (got none)"
        raise ConfigError(msg)
    if any(isinstance(c, bool) or not isinstance(c, int) for c in [*cands, default]):
        msg = f"candidate numbers must be integers (got candidates={cands!r}, default={default!r})"
        raise ConfigError(msg)
    if len(set(cands)) != len(cands):
        msg = f"candidate numbers must be unique (got {cands})"
        raise ConfigError(msg)
    if default in cands:
        msg = f"the default route #{default} must not also be a candidate (got {cands})"
        raise ConfigError(msg)
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 2:
        msg = f"rounds must be an integer >= 2 (got {rounds!r})"
        raise ConfigError(msg)
    return cands


def schedule(
    candidates: Sequence[int], default: int, rounds: int = 5, seed: int = 0
) -> tuple[tuple[int, ...], ...]:
    """The interleaved measurement order: one tuple per round, each route once, shuffled per round.

    Every round holds the default and every candidate exactly once, in a fresh random order
    (seeded, so a study is reproducible).
    """
    cands = _validate(candidates, default, rounds)
    rng = np.random.default_rng(seed)
    routes = [default, *cands]
    return tuple(
        tuple(int(routes[i]) for i in rng.permutation(len(routes))) for _ in range(rounds)
    )


def paired_speedup(
    default_medians: Sequence[float], candidate_medians: Sequence[float], confidence: float = 0.95
) -> SpeedupEstimate:
    """Speed-up from per-round medians paired by round: geometric mean ratio and t-interval on logs."""
    from scipy.stats import ttest_1samp

    d = np.asarray(default_medians, float)
    c = np.asarray(candidate_medians, float)
    if d.shape != c.shape or d.ndim != 1 or d.size < 1:
        msg = f"need >= 1 paired per-round medians of equal length (got {d.size} and {c.size})"
        raise ConfigError(msg)
    if np.any(d <= 0) or np.any(c <= 0) or not np.all(np.isfinite(d * c)):
        msg = "per-round medians must be finite and > 0 ms"
        raise ConfigError(msg)
    logs = np.log(d / c)
    point = float(math.exp(float(np.mean(logs))))
    if d.size < 2:
        return SpeedupEstimate(
            point=point, low=None, high=None, confidence=float(confidence),
            method="paired per-round medians, t-interval on log ratio", n_default=1,
            n_candidate=1, note=too_few(1, 1, "rounds"),
        )
    if np.ptp(logs) == 0:
        low = high = point
    else:
        ci = ttest_1samp(logs, 0.0).confidence_interval(confidence_level=confidence)
        low, high = float(math.exp(ci.low)), float(math.exp(ci.high))
    return SpeedupEstimate(
        point=point,
        low=low,
        high=high,
        confidence=float(confidence),
        method="paired per-round medians, t-interval on log ratio",
        n_default=int(d.size),
        n_candidate=int(c.size),
    )
