"""Regimes: the same route running at two distinct speeds, across processes or inside one window.

ONNX Runtime on our VMs runs the same session at ~0.42 ms in some processes and ~0.84 ms in
others, and single measurements inside one process also jump between levels. A mean or a
t-interval over such data mixes two populations; a route that happens to draw the fast regime
more often looks faster. So regimes are detected and reported (measurement health), and the
re-validation verdict compares only rounds whose two processes landed in the same regime when
the contender's or the default's per-process medians are bimodal
(:func:`gptuner_core.measurement.round_pairs.choose_method`, ``paired.matched_rounds``).

Detection (:func:`detect_regimes`): the best two-cluster split of the log values (the split of the
sorted values that minimises the within-cluster sum of squares, i.e. 1-D 2-means / Otsu). The
values are called bimodal when all hold:

* the clusters' medians differ by at least ``min_separation`` (1.25x by default: 25 %);
* Ashman's D = sqrt(2) |m1 - m2| / sqrt(s1^2 + s2^2) >= 3 (the clusters are cleanly separated;
  the best split of a single normal has D = 2.67, so a unimodal spread is not cut in two);
* the empty gap between the clusters (slowest fast value to fastest slow value) is at least
  ``min_gap`` (half, for per-process medians) of the distance between the cluster medians, in log space: two levels with
  nothing in between, not a continuous spread that small samples make look clustered;
* the smaller cluster holds at least ``min_share`` of the values and at least ``min_count``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


SCOPES = ("processes", "window")


@dataclass(frozen=True, slots=True, kw_only=True)
class Regimes:
    """The two-cluster split of one route's values (per-process medians, or one window's samples).

    Attributes:
        scope: ``"processes"`` (one median per fresh process) or ``"window"`` (one process's samples).
        route: the candidate number, when known.
        n: how many values were examined.
        bimodal: whether the split passes every test of :func:`detect_regimes`.
        fast_ms / slow_ms: medians of the two clusters (``None`` below 4 values).
        fast_share: share of the values in the fast cluster.
        separation: ``slow_ms / fast_ms``.
        ashman_d: Ashman's D of the two clusters in log space (``inf`` for two constant levels).
        message: one plain sentence (empty when not bimodal).
    """

    scope: str
    route: int | None
    n: int
    bimodal: bool
    fast_ms: float | None = None
    slow_ms: float | None = None
    fast_share: float | None = None
    separation: float | None = None
    ashman_d: float | None = None
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope, "route": self.route, "n": self.n, "bimodal": self.bimodal,
            "fast_ms": self.fast_ms, "slow_ms": self.slow_ms, "fast_share": self.fast_share,
            "separation": self.separation,
            "ashman_d": None if self.ashman_d is None or math.isinf(self.ashman_d) else self.ashman_d,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Regimes:
        d = dict(data)
        if d.get("bimodal") and d.get("ashman_d") is None:
            d["ashman_d"] = math.inf
        return cls(**d)


def _best_split(logs: np.ndarray) -> int:
    """Index ``i`` of the best split ``logs[:i] | logs[i:]`` of sorted values (min within-SS)."""
    n = logs.size
    csum = np.cumsum(logs)
    csq = np.cumsum(logs * logs)
    best, best_ss = 1, math.inf
    for i in range(1, n):
        left = csq[i - 1] - csum[i - 1] ** 2 / i
        rs, rq = csum[-1] - csum[i - 1], csq[-1] - csq[i - 1]
        right = rq - rs**2 / (n - i)
        if left + right < best_ss - 1e-15:
            best, best_ss = i, left + right
    return best


def split_point(values_ms: Sequence[float] | np.ndarray) -> float:
    """The log-space cut between the two clusters of the best split (midpoint of the gap)."""
    logs = np.sort(np.log(np.asarray(values_ms, float)))
    i = _best_split(logs)
    return float((logs[i - 1] + logs[i]) / 2.0)


def detect_regimes(
    values_ms: Sequence[float] | np.ndarray,
    *,
    scope: str = "processes",
    route: int | None = None,
    min_separation: float = 1.25,
    min_share: float | None = None,
    min_count: int = 2,
    min_d: float = 3.0,
    min_gap: float | None = None,
) -> Regimes:
    """Two-cluster test of ``values_ms`` (see the module docstring); never raises on few values.

    ``min_share`` defaults to 0.0 for ``"processes"`` (few values; ``min_count`` governs) and 0.05
    for ``"window"`` (many samples; a few outliers are not a regime). ``min_gap`` defaults to 0.5
    for ``"processes"`` and 0 for ``"window"``, where hundreds of samples fill the gap's edges and
    Ashman's D of a large sample is already reliable. Fewer than 6 values are never bimodal.
    """
    arr = np.asarray(values_ms, float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    n = int(arr.size)
    if n < max(2 * min_count, 6):
        return Regimes(scope=scope, route=route, n=n, bimodal=False)
    share_floor = (0.0 if scope == "processes" else 0.05) if min_share is None else min_share
    gap_floor = (0.5 if scope == "processes" else 0.0) if min_gap is None else min_gap
    logs = np.sort(np.log(arr))
    i = _best_split(logs)
    lo, hi = logs[:i], logs[i:]
    fast, slow = float(math.exp(np.median(lo))), float(math.exp(np.median(hi)))
    spread = math.sqrt(float(np.var(lo)) + float(np.var(hi)))
    gap = float(np.mean(hi) - np.mean(lo))
    d = math.inf if spread == 0.0 else math.sqrt(2.0) * gap / spread
    small = min(lo.size, hi.size)
    empty = float(hi[0] - lo[-1])
    bimodal = (
        slow / fast >= min_separation and d >= min_d and small >= min_count
        and small / n >= share_floor and empty >= gap_floor * math.log(slow / fast)
    )
    message = ""
    if bimodal:
        where = "fresh processes" if scope == "processes" else "samples of one measurement window"
        who = f"route #{route}" if route is not None else "the route"
        why = (
            "a process's median depends on the regime it lands in, so the verdict compares "
            "only rounds whose processes landed in the same regime" if scope == "processes" else
            "the window's median depends on how long each regime lasted (other programs "
            "competing for the CPU, frequency changes)"
        )
        message = (
            f"{who} ran in two regimes across {n} {where}: {lo.size} at ~{fast:.4g} ms and "
            f"{hi.size} at ~{slow:.4g} ms ({slow / fast:.2f}x apart); {why}"
        )
    return Regimes(
        scope=scope, route=route, n=n, bimodal=bool(bimodal), fast_ms=fast, slow_ms=slow,
        fast_share=lo.size / n, separation=slow / fast, ashman_d=d, message=message,
    )
