"""Which knobs matter: an importance ranking with bootstrap intervals, and pairwise interactions.

**Why a regression with bootstrap, not optuna's evaluators.** Optuna's fANOVA and
mean-decrease-impurity evaluators fit a random forest over an optuna study's COMPLETE trials: they
need optuna distributions (our grid/one-at-a-time strategies do not create optuna trials), drop
failed trials, give no uncertainty, and are unstable on the 10-50 candidates a build-route study
usually has. Here the log of the median latency of the eligible candidates is regressed on one
indicator per non-default knob value (ridge, so one-at-a-time designs stay solvable); a knob's
importance is the drop in R² when its indicators are removed, normalized over knobs, and 200
bootstrap resamples of the candidates give a 95 % interval. With a one-at-a-time design the
regression reduces to the main effects; with random/TPE designs it separates correlated knobs.

Interactions: for two knob values ``a=x`` and ``b=y`` seen alone and together (and the default
cell), the interaction is the measured speed-up of the pair divided by the product of the two
single speed-ups (1.0 = additive on the log scale); a pair whose combination failed while both
singles did not is reported too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.explain.effects import _log_latency
from gptuner_core.explain.effects import candidate_values
from gptuner_core.explain.effects import finished
from gptuner_core.explain.effects import group_log_mean
from gptuner_core.explain.effects import is_failed
from gptuner_core.explain.effects import varied_knobs


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord

RIDGE = 1e-3


@dataclass(frozen=True, slots=True, kw_only=True)
class KnobImportance:
    """Share of the explained latency variance owed to one knob, with a bootstrap 95 % CI."""

    knob: str
    importance: float
    ci: tuple[float, float]
    n: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Interaction:
    """Two non-default knob values combined; ``ratio`` = pair speed-up / product of singles."""

    knob_a: str
    value_a: str
    knob_b: str
    value_b: str
    n_pair: int
    pair_speedup: float | None
    additive_speedup: float | None
    ratio: float | None
    pair_failure_rate: float
    singles_failure_rate: float


def _design(recs: Sequence[CandidateRecord], defaults: Mapping[str, str], knobs: Sequence[str]):  # noqa: ANN202
    import numpy as np

    cols: list[tuple[str, str]] = []
    rows = [candidate_values(r, defaults, knobs) for r in recs]
    for k in knobs:
        cols += [(k, v) for v in dict.fromkeys(row[k] for row in rows) if v != defaults.get(k, "")]
    x = np.array([[1.0 if row[k] == v else 0.0 for k, v in cols] for row in rows]).reshape(len(rows), len(cols))
    return x, cols


def _r2(x, y) -> float:  # noqa: ANN001
    import numpy as np

    return _r2_drop(x, y, [np.arange(x.shape[1])])[0]


def _r2_drop(x, y, keeps: list) -> list[float]:  # noqa: ANN001
    """R² of the ridge fit of ``y`` on each column subset in ``keeps``. The centred Gram matrix
    is formed once and each subset's fit read from its sub-blocks (the same normal equations as
    fitting ``x[:, keep]`` alone: centring is per column), so a study of 10,000 candidates costs
    one ``n x cols²`` product per resample, not one per knob."""
    import numpy as np

    yc = y - y.mean()
    sst = float(yc @ yc)
    xc = x - x.mean(axis=0)
    gram = xc.T @ xc
    cross = xc.T @ yc
    out = []
    for keep in keeps:
        if sst <= 0 or len(keep) == 0:
            out.append(0.0)
            continue
        g = gram[np.ix_(keep, keep)]
        c = cross[keep]
        beta = np.linalg.solve(g + RIDGE * np.eye(len(keep)), c)
        sse = sst - 2.0 * float(beta @ c) + float(beta @ g @ beta)
        out.append(max(0.0, 1.0 - sse / sst))
    return out


def _shares(x, y, cols: list[tuple[str, str]], knobs: Sequence[str]) -> list[float]:  # noqa: ANN001
    import numpy as np

    keeps = [np.arange(x.shape[1])] + [
        np.array([i for i, (name, _) in enumerate(cols) if name != k], dtype=int) for k in knobs
    ]
    full, *dropped = _r2_drop(x, y, keeps)
    drops = [max(0.0, full - r) for r in dropped]
    total = sum(drops)
    return [d / total if total > 0 else 0.0 for d in drops]


def importance(
    records: Sequence[CandidateRecord], defaults: Mapping[str, str], *, resamples: int = 200, seed: int = 0
) -> list[KnobImportance]:
    """Knobs ranked by their share of the explained log-latency variance (eligible candidates)."""
    import numpy as np

    recs = [r for r in finished(records) if _log_latency(r) is not None]
    knobs = varied_knobs(recs, defaults)
    if len(recs) < 3 or not knobs:
        return []
    x, cols = _design(recs, defaults, knobs)
    y = np.array([_log_latency(r)[0] for r in recs])  # type: ignore[index]
    point = _shares(x, y, cols, knobs)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(resamples):
        idx = rng.integers(0, len(recs), len(recs))
        boots.append(_shares(x[idx], y[idx], cols, knobs))
    arr = np.array(boots)
    out = [
        KnobImportance(knob=k, importance=point[i], n=len(recs),
                       ci=(float(np.quantile(arr[:, i], 0.025)), float(np.quantile(arr[:, i], 0.975))))
        for i, k in enumerate(knobs)
    ]
    return sorted(out, key=lambda e: -e.importance)


def interactions(records: Sequence[CandidateRecord], defaults: Mapping[str, str]) -> list[Interaction]:
    """Every pair of non-default values seen together, against their singles and the default."""
    recs = finished(records)
    knobs = varied_knobs(recs, defaults)
    rows = [candidate_values(r, defaults, knobs) for r in recs]
    cells: dict[tuple[str, ...], list[CandidateRecord]] = {}  # records by their knob values
    for r, row in zip(recs, rows, strict=True):
        cells.setdefault(tuple(row[k] for k in knobs), []).append(r)

    def cell(assign: dict[str, str]) -> list[CandidateRecord]:
        return cells.get(tuple(assign.get(k) or defaults.get(k, "") for k in knobs), [])

    def log_mean(group: list[CandidateRecord]) -> float | None:
        pts = [p for p in map(_log_latency, group) if p is not None]
        return group_log_mean(pts)[0] if pts else None

    base = log_mean(cell({}))
    out = []
    pairs = set()
    for row in rows:
        changed = [(k, row[k]) for k in knobs if row[k] != defaults.get(k, "")]
        if len(changed) == 2:
            pairs.add((changed[0], changed[1]))
    for (ka, va), (kb, vb) in sorted(pairs):
        pair, sa, sb = cell({ka: va, kb: vb}), cell({ka: va}), cell({kb: vb})
        lp, la, lb = log_mean(pair), log_mean(sa), log_mean(sb)
        pair_s = math.exp(base - lp) if base is not None and lp is not None else None
        add_s = math.exp(2 * base - la - lb) if None not in (base, la, lb) else None  # type: ignore[operator]
        singles = sa + sb
        out.append(Interaction(
            knob_a=ka, value_a=va, knob_b=kb, value_b=vb, n_pair=len(pair),
            pair_speedup=pair_s, additive_speedup=add_s,
            ratio=pair_s / add_s if pair_s is not None and add_s else None,
            pair_failure_rate=sum(map(is_failed, pair)) / len(pair) if pair else 0.0,
            singles_failure_rate=sum(map(is_failed, singles)) / len(singles) if singles else 0.0,
        ))
    return out
