"""Drift sentinel: the default route re-measured every N candidates, and normalization against it.

The engine re-measures the default route every N candidates and stores each as a ``"baseline"``
event with payload ``{"median_ms": float, "after_candidate": int, ...}`` (the event's ``time`` is
the wall-clock time, seconds). Drift is the relative change of each baseline vs the first; a
candidate's median can be normalized to the first baseline through the baseline nearest in time:
``normalized = candidate_median * first.median / nearest.median``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gptuner_core.errors import ConfigError


@dataclass(frozen=True, slots=True, kw_only=True)
class Baseline:
    """One re-measurement of the default route: wall time (s) and median latency (ms)."""

    time: float
    median_ms: float
    after_candidate: int | None = None


def _baseline(item: Any) -> Baseline:
    if isinstance(item, Baseline):
        return item
    if isinstance(item, tuple | list) and len(item) == 2:
        t, m = item
        return _checked(t, m, None)
    payload = getattr(item, "payload", None)
    if isinstance(payload, dict):  # a storage Event of kind "baseline"
        median = payload.get("median_ms")
        if median is None and isinstance(payload.get("latency"), dict):
            median = payload["latency"].get("median_ms")
        return _checked(
            payload.get("time", getattr(item, "time", None)),
            median,
            payload.get("after_candidate"),
        )
    if isinstance(item, dict):
        median = item.get("median_ms")
        if median is None and isinstance(item.get("latency"), dict):
            median = item["latency"].get("median_ms")
        return _checked(item.get("time"), median, item.get("after_candidate"))
    msg = (
        "a baseline must be a Baseline, a (time, median_ms) pair, a dict with 'time' and "
        f"'median_ms', or a 'baseline' event (got {type(item).__name__})"
    )
    raise ConfigError(msg)


def _checked(t: Any, median: Any, after: Any) -> Baseline:
    ok_t = isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t)
    ok_m = isinstance(median, int | float) and not isinstance(median, bool) and median > 0
    if not (ok_t and ok_m and math.isfinite(median)):
        msg = f"a baseline needs a finite time and a median_ms > 0 (got time={t!r}, median_ms={median!r})"
        raise ConfigError(msg)
    return Baseline(time=float(t), median_ms=float(median), after_candidate=after)


def baselines(items: Iterable[Any]) -> list[Baseline]:
    """Normalize baseline events / dicts / pairs into :class:`Baseline` records, ordered by time."""
    return sorted((_baseline(i) for i in items), key=lambda b: b.time)


def drift(items: Iterable[Any]) -> list[float]:
    """Relative change of each baseline's median vs the first (first is 0.0; +0.05 = 5 % slower)."""
    bs = baselines(items)
    if not bs:
        return []
    ref = bs[0].median_ms
    return [b.median_ms / ref - 1.0 for b in bs]


def drift_range(items: Iterable[Any]) -> tuple[float, float] | None:
    """``(min, max)`` of :func:`drift`, or ``None`` without baselines."""
    d = drift(items)
    return (min(d), max(d)) if d else None


def nearest(candidate_time: float, items: Iterable[Any]) -> Baseline:
    """The baseline closest in time to ``candidate_time`` (earlier one on a tie)."""
    bs = baselines(items)
    if not bs:
        msg = "cannot normalize against baselines: none were recorded (expected >= 1)"
        raise ConfigError(msg)
    return min(bs, key=lambda b: (abs(b.time - candidate_time), b.time))


def normalize(candidate_time: float, candidate_median: float, items: Iterable[Any]) -> float:
    """``candidate_median`` rescaled to the conditions of the first baseline.

    ``candidate_median * first.median_ms / nearest.median_ms``: if the default route ran 10 %
    slower around the time the candidate was measured, the candidate is credited 10 %.
    """
    bs = baselines(items)
    if not (isinstance(candidate_median, int | float) and candidate_median > 0):
        msg = f"candidate_median must be a number > 0 ms (got {candidate_median!r})"
        raise ConfigError(msg)
    near = nearest(candidate_time, bs)
    return float(candidate_median) * bs[0].median_ms / near.median_ms


def normalized_speedup(
    candidate_time: float, candidate_median: float, items: Iterable[Any]
) -> float:
    """Speed-up vs the default measured nearest in time: ``nearest.median_ms / candidate_median``."""
    if not (isinstance(candidate_median, int | float) and candidate_median > 0):
        msg = f"candidate_median must be a number > 0 ms (got {candidate_median!r})"
        raise ConfigError(msg)
    return nearest(candidate_time, items).median_ms / float(candidate_median)
