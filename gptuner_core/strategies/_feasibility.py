"""Where routes build: probability models for ``bo`` from the routes that built or failed.

Both take the evaluated routes as rows of knob-value indices (``rows``), whether each built
(``built``: 1.0 or 0.0), and return P(builds) for each candidate row.
"""

from __future__ import annotations

import itertools
from typing import Any


def pairwise_share(rows: Any, built: Any, pool: Any, sizes: Any, prior: float = 1.0,
                   optimism: float = 1.0) -> Any:
    """Failures as interactions of at most two knobs.

    The combinatorial-testing finding: a configuration fails because of one value or one pair
    of values (``x*y > 1024``, ``padding without shared memory``). Per pair of knobs and pair of
    values: the share of routes with that pair that built, shrunk toward ``optimism`` (a pair
    never tried is assumed to build, so that routes with new pairs stay candidates; one failure
    halves it); a route is as likely to build as its worst pair. A failure is blamed only on its worst pairs
    (explaining away: a pair seen in a failed route whose failure another pair explains, and in
    routes that built, is not penalised for it).
    """
    import numpy as np

    rate = optimism
    pairs = list(itertools.combinations(range(len(sizes)), 2))
    if not pairs:  # one knob: the share per value
        seen = np.bincount(rows[:, 0], minlength=sizes[0])
        good = np.bincount(rows[:, 0], weights=built, minlength=sizes[0])
        return ((good + prior * rate) / (seen + prior))[pool[:, 0]]

    def tables(weight: Any) -> list[Any]:
        out = []
        for k, (i, j) in enumerate(pairs):
            seen = np.zeros((sizes[i], sizes[j]))
            good = np.zeros((sizes[i], sizes[j]))
            np.add.at(seen, (rows[:, i], rows[:, j]), weight[:, k])
            np.add.at(good, (rows[:, i], rows[:, j]), weight[:, k] * built)
            out.append((good + prior * rate) / (seen + prior))
        return out

    def at(shares: list[Any], x: Any) -> Any:
        return np.stack([t[x[:, i], x[:, j]] for t, (i, j) in zip(shares, pairs, strict=True)], 1)

    weight = np.ones((len(rows), len(pairs)))
    first = at(tables(weight), rows)
    failed = built < 0.5
    blame = first <= first.min(1, keepdims=True) + 1e-9
    weight[failed] = blame[failed]
    return at(tables(weight), pool).min(1)


def kernel_share(x: Any, built: Any, xs: Any, scales: Any) -> Any:
    """Kernel-weighted share of nearby routes that built (Matern-5/2 with ``scales``)."""
    from gptuner_core.strategies._gp import matern52

    rate = float(built.mean())
    k = matern52(xs, x, scales)
    return (k @ built + 0.5 * rate) / (k.sum(1) + 0.5)


def source_verdict(pool: Any, source: dict, exhaustive: bool) -> Any:
    """Factor per pool row from a warm-start source: 0.2 where the route failed there, 0.05
    where it is absent from an exhaustive source (infeasible there), else 1."""
    import numpy as np

    out = np.ones(len(pool))
    for r, row in enumerate(pool):
        t = tuple(int(j) for j in row)
        if t not in source:
            out[r] = 0.05 if exhaustive else 1.0
        elif source[t] is None:
            out[r] = 0.2
    return out
