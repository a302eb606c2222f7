"""Several measured shapes, one score: the per-shape speed-ups and the study's overall objective.

A study measured at several input shapes (``--measure-shapes``, e.g. batch 1 and batch 32) has,
for every candidate, a latency distribution per shape. The speed-up at shape *i* is the ratio of
medians ``default_i / candidate_i``; the overall score follows the user's choice:

* ``minimax``: the worst shape's speed-up, ``min_i default_i / candidate_i`` (a route is only as
  good as its slowest shape: never recommend one that wins at batch 32 and loses at batch 1);
* ``weighted:W1,W2,...``: a traffic mix with W_i requests at shape *i*, so the speed-up of the
  whole mix, ``sum_i W_i default_i / sum_i W_i candidate_i`` (time spent, not an average of ratios).

The confidence interval is a percentile bootstrap of the overall score: every shape's default
and candidate samples are resampled independently, their medians combined by the objective.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from collections.abc import Sequence

OBJECTIVES = ("minimax", "weighted")


@dataclass(frozen=True, slots=True, kw_only=True)
class ShapeObjective:
    """How per-shape speed-ups become one score (see the module docstring).

    Example:
        >>> ShapeObjective.parse("weighted:3,1", shapes=2).combine((2.0, 8.0), (1.0, 8.0))
        1.2857142857142858
        >>> ShapeObjective.parse("minimax", shapes=2).combine((2.0, 8.0), (1.0, 8.0))
        1.0
    """

    kind: str = "minimax"
    weights: tuple[float, ...] = ()

    @classmethod
    def parse(cls, text: str, *, shapes: int) -> ShapeObjective:
        """``minimax`` or ``weighted:W1,W2,...`` (one weight > 0 per measured shape)."""
        kind, _, rest = str(text).strip().partition(":")
        if kind == "minimax" and not rest:
            return cls(kind="minimax")
        if kind != "weighted":
            msg = f"--shape-objective must be 'minimax' or 'weighted:W1,W2,...' (got {text!r})"
            raise ConfigError(msg)
        try:
            weights = tuple(float(w) for w in rest.split(","))
        except ValueError:
            weights = ()
        if not weights or any(not math.isfinite(w) or w <= 0 for w in weights):
            msg = f"--shape-objective weighted: weights must be numbers > 0, e.g. weighted:3,1 (got {rest!r})"
            raise ConfigError(msg)
        if len(weights) != shapes:
            msg = (f"--shape-objective {text!r} gives {len(weights)} weight(s) for {shapes} "
                   "measured shape(s) (expected one weight per --measure-shapes)")
            raise ConfigError(msg)
        return cls(kind="weighted", weights=weights)

    def text(self) -> str:
        return self.kind if self.kind == "minimax" else "weighted:" + ",".join(f"{w:g}" for w in self.weights)

    def combine(self, default_ms: Sequence[float], candidate_ms: Sequence[float]) -> float:
        """The overall speed-up of per-shape medians (> 1 = faster)."""
        d = np.asarray(default_ms, dtype=float)
        c = np.asarray(candidate_ms, dtype=float)
        return float(self._combine(d[None, :], c[None, :])[0])

    def _combine(self, d: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Row-wise over ``(replicates, shapes)`` arrays of medians."""
        if self.kind == "minimax":
            return np.min(d / c, axis=1)
        w = np.asarray(self.weights, dtype=float)
        return (d @ w) / (c @ w)


@dataclass(frozen=True, slots=True, kw_only=True)
class ShapeSpeedup:
    """Per-shape speed-ups (ratio of medians) and the overall score with its bootstrap CI."""

    per_shape: tuple[float, ...]
    per_shape_ci: tuple[tuple[float, float] | None, ...]
    point: float
    ci: tuple[float, float] | None
    objective: str


def _medians(samples: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return np.median(samples[idx], axis=1)


def shape_speedup(
    objective: ShapeObjective,
    default_samples: Sequence[Sequence[float]],
    candidate_samples: Sequence[Sequence[float]],
    *,
    confidence: float = 0.95,
    seed: int = 0,
    n_resamples: int = 2000,
) -> ShapeSpeedup:
    """Per-shape and overall speed-up of a candidate vs the default (samples per shape, ms).

    With fewer than two samples of a shape on either side there is a point estimate and no CI.
    """
    if len(default_samples) != len(candidate_samples) or not default_samples:
        msg = (f"shape speed-up needs the same measured shapes on both sides (got "
               f"{len(default_samples)} and {len(candidate_samples)})")
        raise ConfigError(msg)
    ds = [np.asarray(s, dtype=float) for s in default_samples]
    cs = [np.asarray(s, dtype=float) for s in candidate_samples]
    if any(a.size == 0 or np.any(a <= 0) for a in (*ds, *cs)):
        msg = "latency samples must be > 0 ms and present at every shape to form a speed-up"
        raise ConfigError(msg)
    d_med = np.array([np.median(a) for a in ds])
    c_med = np.array([np.median(a) for a in cs])
    per_shape = tuple(float(x) for x in d_med / c_med)
    point = objective.combine(d_med, c_med)
    if min(a.size for a in (*ds, *cs)) < 2:
        return ShapeSpeedup(per_shape=per_shape, per_shape_ci=(None,) * len(ds), point=point,
                            ci=None, objective=objective.text())
    rng = np.random.default_rng(seed)
    d_rep = np.column_stack([_medians(a, rng.integers(0, a.size, (n_resamples, a.size))) for a in ds])
    c_rep = np.column_stack([_medians(a, rng.integers(0, a.size, (n_resamples, a.size))) for a in cs])
    tail = (1 - confidence) / 2 * 100
    lo, hi = np.percentile(objective._combine(d_rep, c_rep), [tail, 100 - tail])
    ratios = d_rep / c_rep
    per_ci = tuple(
        (float(a), float(b)) for a, b in zip(*np.percentile(ratios, [tail, 100 - tail], axis=0), strict=True)
    )
    return ShapeSpeedup(per_shape=per_shape, per_shape_ci=per_ci, point=point,
                        ci=(float(lo), float(hi)), objective=objective.text())


__all__ = ["OBJECTIVES", "ShapeObjective", "ShapeSpeedup", "shape_speedup"]
