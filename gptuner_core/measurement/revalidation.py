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
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np

from gptuner_core.errors import ConfigError
from gptuner_core.errors import GptunerError
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


@dataclass(frozen=True, slots=True, kw_only=True)
class RevalidationResult:
    """Outcome of :func:`revalidate`.

    Attributes:
        winner: the candidate declared faster than the default, or ``None`` (keep the default).
        message: one plain sentence for the user.
        estimates: speed-up vs default per surviving candidate (at ``per_candidate_confidence``).
        round_medians: per-round median (ms) per route, default included, in round order.
        schedule: the interleaved order that was run.
        failures: candidates dropped because a fresh measurement failed, with the error text.
        best: the candidate with the highest point speed-up (``None`` if all failed).
    """

    winner: int | None
    message: str
    default: int
    estimates: dict[int, SpeedupEstimate]
    round_medians: dict[int, tuple[float, ...]]
    schedule: tuple[tuple[int, ...], ...]
    failures: dict[int, str] = field(default_factory=dict)
    best: int | None = None
    min_effect: float = 0.01
    confidence: float = 0.95
    per_candidate_confidence: float = 0.95

    @property
    def significant(self) -> bool:
        return self.winner is not None

    def winner_meta(self) -> dict[str, Any]:
        """The store's ``winner`` meta: ``{"number", "speedup", "ci", "significant", "message"}``.

        Without a winner, ``number`` is the default route, ``speedup`` 1.0 and ``ci`` the best
        candidate's interval (or ``None``).
        """
        chosen = self.winner if self.winner is not None else self.best
        est = self.estimates.get(chosen) if chosen is not None else None
        return {
            "number": self.winner if self.winner is not None else self.default,
            "speedup": est.point if (est is not None and self.winner is not None) else 1.0,
            "ci": list(est.ci) if est is not None and est.ci is not None else None,
            "significant": self.winner is not None,
            "message": self.message,
            "best": self.best,
            "best_speedup": est.point if est is not None else None,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "message": self.message,
            "default": self.default,
            "estimates": {str(k): v.to_json() for k, v in self.estimates.items()},
            "round_medians": {str(k): list(v) for k, v in self.round_medians.items()},
            "schedule": [list(r) for r in self.schedule],
            "failures": {str(k): v for k, v in self.failures.items()},
            "best": self.best,
            "min_effect": self.min_effect,
            "confidence": self.confidence,
            "per_candidate_confidence": self.per_candidate_confidence,
        }


def revalidate(
    candidates: list[int],
    default: int,
    measure_fresh: Callable[[int, int], list[float]],
    rounds: int = 5,
    seed: int = 0,
    min_effect: float = 0.01,
    confidence: float = 0.95,
    *,
    correction: str = "bonferroni",
) -> RevalidationResult:
    """Re-measure ``candidates`` and ``default`` interleaved in fresh processes; maybe declare a winner.

    Args:
        candidates: numbers of the top-K candidates (the default excluded).
        default: number of the default route (usually 0).
        measure_fresh: ``(number, round_index) -> samples_ms``; measures that route's artifact in a
            fresh process. A :class:`~gptuner_core.errors.GptunerError` drops the candidate
            (recorded in ``failures``); for the default it propagates.
        rounds: interleaved rounds (>= 2; 5 by default).
        seed: seed of the randomized order.
        min_effect: the smallest speed-up worth reporting (0.01 = 1 %).
        confidence: family-wise confidence level.
        correction: ``"bonferroni"`` (default) or ``"none"`` (per-candidate level = confidence).

    Returns:
        A :class:`RevalidationResult` (``winner=None`` when no route is significantly faster).
    """
    order = schedule(candidates, default, rounds, seed)
    if not (isinstance(min_effect, int | float) and 0 <= min_effect < 10):
        msg = f"min_effect must be a number >= 0, e.g. 0.01 for 1 % (got {min_effect!r})"
        raise ConfigError(msg)
    if not (isinstance(confidence, int | float) and 0 < confidence < 1):
        msg = f"confidence must be a number strictly between 0 and 1 (got {confidence!r})"
        raise ConfigError(msg)
    if correction not in ("bonferroni", "none"):
        msg = f"correction must be 'bonferroni' or 'none' (got {correction!r})"
        raise ConfigError(msg)

    medians: dict[int, list[float | None]] = {r: [None] * rounds for r in [default, *candidates]}
    failures: dict[int, str] = {}
    for round_index, routes in enumerate(order):
        for number in routes:
            if number in failures:
                continue
            try:
                samples = measure_fresh(number, round_index)
                arr = np.asarray(list(samples), float)
                if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
                    msg = (
                        f"re-measurement of route #{number} in round {round_index} returned no "
                        f"usable samples (expected > 0 ms each, got {arr.size} values)"
                    )
                    raise ConfigError(msg)
            except GptunerError as exc:
                if number == default:
                    raise
                failures[number] = str(exc)
                continue
            medians[number][round_index] = float(np.median(arr))

    survivors = [c for c in candidates if c not in failures]
    k = max(1, len(survivors))
    level = 1 - (1 - confidence) / k if correction == "bonferroni" else confidence
    d = medians[default]
    estimates = {
        c: paired_speedup(
            [d[i] for i in range(rounds)], [medians[c][i] for i in range(rounds)], level
        )
        for c in survivors
    }
    best = max(estimates, key=lambda c: (estimates[c].point, -c)) if estimates else None
    significant = [c for c, e in estimates.items() if e.significant(min_effect)]
    winner = max(significant, key=lambda c: (estimates[c].point, -c)) if significant else None

    pct = f"{confidence * 100:g}%"
    adj = f", Bonferroni over {k}" if correction == "bonferroni" and k > 1 else ""
    if winner is not None:
        e = estimates[winner]
        message = (
            f"route #{winner} is significantly faster than the default: {e.point:.3f}x, "
            f"{pct} CI [{e.low:.3f}, {e.high:.3f}]{adj}, {rounds} interleaved rounds in fresh "
            f"processes"
        )
    elif best is not None:
        e = estimates[best]
        message = (
            f"no route is significantly faster than the default (best: #{best} {e.point:.3f}x, "
            f"{pct} CI [{e.low:.3f}, {e.high:.3f}]{adj}); keeping the default"
        )
    else:
        message = (
            "no route is significantly faster than the default (every re-measured candidate "
            "failed); keeping the default"
        )
    return RevalidationResult(
        winner=winner,
        message=message,
        default=default,
        estimates=estimates,
        round_medians={
            r: tuple(v for v in medians[r] if v is not None) for r in [default, *survivors]
        },
        schedule=order,
        failures=failures,
        best=best,
        min_effect=float(min_effect),
        confidence=float(confidence),
        per_candidate_confidence=float(level),
    )
