"""Where routes build: probability models for ``bo`` from the routes that built or failed.

Both take the evaluated routes as rows of knob-value indices (``rows``), whether each built
(``built``: 1.0 or 0.0), and return P(builds) for each candidate row.
"""

from __future__ import annotations

import itertools
from typing import Any


def pairwise_share(rows: Any, built: Any, pool: Any, sizes: Any, prior: float = 1.0,
                   optimism: float = 1.0, share: bool = True, failure_weight: Any = None) -> Any:
    """Failures as interactions of at most two knobs.

    The combinatorial-testing finding: a configuration fails because of one value or one pair
    of values (``x*y > 1024``, ``padding without shared memory``). Per pair of knobs and pair of
    values: the share of routes with that pair that built, shrunk toward ``optimism`` (a pair
    never tried is assumed to build, so that routes with new pairs stay candidates; one failure
    halves it); a route is as likely to build as its worst pair. A failure is blamed only on its worst pairs
    (explaining away: a pair seen in a failed route whose failure another pair explains, and in
    routes that built, is not penalised for it), and (``share``) they share one failure's blame:
    a failure that 6 untried pairs could explain counts 1/6 against each (1/(1 + 1/6) = 0.86,
    where a whole failure halves a pair and bars it: on convolution A100 the first random
    routes, blocks over the thread limit, barred ``read_only=1, use_shmem=1`` for good).
    ``failure_weight`` (per row): how much of each failure is left to blame on pairs (what
    another model does not explain already: :func:`learned_share`).
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
    weight[failed] = blame[failed] / (blame[failed].sum(1, keepdims=True) if share else 1.0)
    if failure_weight is not None:
        weight[failed] *= failure_weight[failed][:, None]
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


def size_features(values_per_knob: Any) -> list[Any]:
    """Per knob, a table value index -> feature columns for :func:`logistic_share`: a numeric knob
    of positive values by log2 of its value (GPU limits are products of sizes: ``x*y <= 1024`` is
    linear in logs), other numeric knobs by position, unordered ones one-hot; each in [0, 1]."""
    import numpy as np

    out = []
    for values in values_per_knob:
        try:
            nums = [float(v) for v in values]
        except ValueError:
            nums = None
        if nums is not None and len(values) > 1:
            col = np.log2(nums) if min(nums) > 0 else np.arange(len(values), dtype=float)
            span = float(col.max() - col.min()) or 1.0
            out.append(((col - col.min()) / span)[:, None])
        elif len(values) == 2:
            out.append(np.array([[0.0], [1.0]]))
        else:
            out.append(np.eye(len(values)))
    return out


def quadratic(rows: Any, tables: list[Any]) -> Any:
    """Rows of value indices as features: each knob's columns (``tables``), their squares and
    the products of every two columns of different knobs (a boundary ``a*b <= c``, a band
    ``32 <= x*y <= 1024``, or a switch that matters only with another's value)."""
    import numpy as np

    cols = [t[rows[:, d]] for d, t in enumerate(tables)]
    base = np.hstack(cols)
    owner = np.concatenate([np.full(c.shape[1], d) for d, c in enumerate(cols)])
    i, j = np.triu_indices(base.shape[1])
    keep = (owner[i] != owner[j]) | (i == j)
    return np.hstack([base, base[:, i[keep]] * base[:, j[keep]]])


def penalised_loss(a: Any, built: Any, reg: Any, w: Any) -> float:
    """The negative log posterior :func:`logistic_mode` minimises: the logistic loss of the
    outcomes ``built`` at weights ``w`` on the design ``a`` plus the L2 prior ``reg``."""
    import numpy as np

    z = a @ w
    return float(np.sum(np.logaddexp(0.0, z) - built * z) + 0.5 * np.sum(reg * w * w))


def logistic_mode(a: Any, built: Any, reg: Any, steps: int = 25) -> Any:
    """The weights of the posterior mode, by damped Newton steps from the intercept at the share
    built: a step whose loss is not lower is halved until it is (up to 30 halvings). Plain
    Newton steps can overshoot when the routes are few and the features many (on convolution
    A100 two in three fits had a step that raised the loss); the loss never rises here."""
    import numpy as np

    rate = float(built.mean())
    w = np.zeros(a.shape[1])
    w[0] = np.log(rate / (1 - rate))
    loss = penalised_loss(a, built, reg, w)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ w, -30, 30)))
        grad = a.T @ (p - built) + reg * w
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        for _ in range(30):
            trial = penalised_loss(a, built, reg, w - step)
            if trial <= loss:
                break
            step = step / 2
        else:
            break  # no step lowers the loss: at the mode, to rounding
        w, loss = w - step, trial
        if np.abs(step).max() < 1e-6:
            break
    return w


def logistic_share(x: Any, built: Any, px: Any, l2: float = 3.0, steps: int = 25) -> Any:
    """P(builds) at ``px`` from a Bayesian logistic regression on ``x`` (L2 prior, damped Newton
    steps to the mode: :func:`logistic_mode`, Laplace's approximation for its spread) and the
    outcomes ``built`` (1.0 / 0.0): where the data say little (far from every route tried) the
    probability is moderated toward 1/2 instead of extrapolated to 0 or 1. Without both
    outcomes, their share everywhere."""
    import numpy as np

    rate = float(built.mean()) if len(built) else 1.0
    if rate in (0.0, 1.0):
        return np.full(len(px), rate if len(built) else 1.0)
    mu, sd = x.mean(0), x.std(0) + 1e-6
    a = np.hstack([np.ones((len(x), 1)), (x - mu) / sd])
    b = np.hstack([np.ones((len(px), 1)), (px - mu) / sd])
    reg = np.full(a.shape[1], l2)
    reg[0] = 1e-6
    w = logistic_mode(a, built, reg, steps)
    p = 1.0 / (1.0 + np.exp(-np.clip(a @ w, -30, 30)))
    hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg)
    var = np.einsum("ij,ij->i", b, np.linalg.solve(hess, b.T).T)  # Laplace: the weights' spread
    z = (b @ w) / np.sqrt(1.0 + np.pi * var / 8.0)  # moderated: unexplored corners tend to 1/2
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


#: the least share of a failure left to the pairs once the sizes' model explains it
EXPLAINED_FLOOR = 0.1


def learned_share(rows: Any, built: Any, pool: Any, sizes: Any, tables: list[Any]) -> Any:
    """``feasibility_model=learned``: the lower of :func:`pairwise_share` (a pair of values seen
    failing) and :func:`logistic_share` on the knobs' sizes, squares and products (``tables``:
    :func:`size_features`), so a limit like ``block_x * block_y <= 1024`` reaches pairs never
    tried. A failure the sizes' model expects (its P(builds) at that route, at least
    :data:`EXPLAINED_FLOOR`) counts that much against the route's pairs: explained away, it
    does not bar the switches it happened to have (convolution A100: the first routes over the
    thread limit barred the optimum's ``read_only=1, use_shmem=1``)."""
    import numpy as np

    at_rows = quadratic(rows, tables)
    both = logistic_share(at_rows, built, np.vstack([at_rows, quadratic(pool, tables)]))
    explained, logit = both[: len(rows)], both[len(rows):]
    pair = pairwise_share(rows, built, pool, sizes, failure_weight=np.clip(explained, EXPLAINED_FLOOR, 1.0))
    return np.minimum(pair, logit)


def novelty(pool: Any, tried: list, sizes: Any) -> Any:
    """Per pool row, how many of its knob values no route in ``tried`` has."""
    import numpy as np

    seen = [np.zeros(size, dtype=bool) for size in sizes]
    for t in tried:
        for d, j in enumerate(t):
            seen[d][j] = True
    return sum((~seen[d][pool[:, d]]).astype(float) for d in range(len(sizes)))
