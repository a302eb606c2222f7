"""``bo``'s transfer prior: the source's results as the prior mean of the new latency.

The new log latency is modelled as ``a + b x source`` (:func:`._gp.prior_line`) plus a residual
that a Gaussian process learns, in units of :func:`residual_scale`. Where the study has not looked
the residual's spread is that scale: it says how far the new GPU may depart from the source.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING
from typing import Any
from typing import TypeVar


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterable

    from gptuner_core.routes import Route

K = TypeVar("K", bound=Hashable)

#: with a prior, the residual's scale is at least this share of the source's log-latency spread
SPREAD_SHARE = 0.5


def residual_scale(resid: Any, *, prior_spread: float | None, share: float = SPREAD_SHARE) -> float:
    """The scale of the residual the GP models: the residuals' spread (at least 0.05).

    With a prior (``prior_spread``: the standard deviation of the source's log latencies) it is
    also at least ``share`` of the source's spread. A study guided by a prior measures the
    routes the source ranks best, where the two GPUs agree; their residuals alone made the model
    sure of the rest. On A6000 -> A100 (convolution) the residuals of a run's results spread
    0.10-0.17 while those of every route both GPUs measured spread 0.32, and the A100's optimum
    (rank 414 on the A6000) never looked worth a build. With two results or fewer: 0.3 with a
    prior, 1.0 without.
    """
    import numpy as np

    resid = np.asarray(resid, dtype=float)
    if len(resid) <= 2:
        return 0.3 if prior_spread is not None else 1.0
    scale = max(float(resid.std()), 0.05)
    if prior_spread is not None:
        scale = max(scale, share * prior_spread)
    return scale


def source_table(results: Iterable[tuple[Route, float | None]],
                 to_index: Callable[[Route], K | None]) -> dict[K, float | None]:
    """The source's log latency per route (as ``to_index`` names it: ``bo``'s index tuples, the
    Optuna strategies' route keys; routes outside this space dropped): the fastest measurement
    where it has several, ``None`` where it only failed."""
    import math

    out: dict[K, float | None] = {}
    for route, latency in results:
        t = to_index(route)
        if t is None:
            continue
        value = math.log(latency) if latency else None
        old = out.get(t)
        out[t] = value if old is None else (old if value is None else min(old, value))
    return out


def measured_or_modelled(modelled: Any, rows: Any, table: dict[tuple[int, ...], float | None]) -> Any:
    """The source's value per row: measured where ``table`` has it, else ``modelled``."""
    import numpy as np

    out = np.array(modelled, dtype=float)
    for r, row in enumerate(rows):
        v = table.get(tuple(int(j) for j in row))
        if v is not None:
            out[r] = v
    return out
