"""Process-to-process variation in a screening interval (issue 25, item 2).

A screening speed-up compares one process of the default with one process of the route; the
bootstrap over their samples is a WITHIN-process interval. Between processes the per-process median
moves far more (regimes, placement, a busy host), so that interval does not hold across processes
(``benchmarks/interval_coverage.py``; table in ``docs/benchmarks.md``). The default route's
fresh-process medians (its screening run, drift sentinels and re-validation rounds) measure that
variation: :func:`process_sd` is their log standard deviation, and :func:`widened_interval` adds
it, for both processes of the comparison, to the within-process half-width on the log scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def process_sd(medians_ms: Sequence[float]) -> float | None:
    """Standard deviation of the log per-process medians of one route (``None`` below 3)."""
    logs = [math.log(m) for m in medians_ms if m and m > 0]
    if len(logs) < 3:
        return None
    mean = sum(logs) / len(logs)
    return math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))


def widened_interval(point: float, ci: tuple[float, float] | None, sd: float | None,
                     *, z: float = 1.959964) -> tuple[float, float]:
    """The interval of ``point`` with ``ci``'s within-process half-width (log scale) combined with
    two processes' variation ``sd`` (the default's and the route's): ``sqrt(h**2 + 2 (z sd)**2)``."""
    within = (math.log(ci[1]) - math.log(ci[0])) / 2.0 if ci else 0.0
    between = z * math.sqrt(2.0) * (sd or 0.0)
    half = math.sqrt(within**2 + between**2)
    centre = math.log(point)
    return math.exp(centre - half), math.exp(centre + half)


def default_process_medians(default_median_ms: float | None, baselines: Sequence[dict],
                            revalidations: Sequence[dict]) -> list[float]:
    """The default route's per-process medians in a study: its screening process, each drift
    sentinel (``baseline`` events) and each re-validation round (``revalidation`` events)."""
    out = [default_median_ms] if default_median_ms else []
    out += [float(b["median_ms"]) for b in baselines if b.get("median_ms")]
    for rev in revalidations:
        default = str(rev.get("default", 0))
        out += [float(m) for m in (rev.get("round_medians") or {}).get(default, []) if m]
    return out
