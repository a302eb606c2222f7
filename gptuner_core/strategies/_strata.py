"""Combinations of switch values: where ``hybrid``'s random restarts start (``restart_strata``).

A switch (a two-valued knob such as ``use_shmem``) often picks a code path with basins of its own:
on convolution A100 every route within 90 % of the optimum has ``read_only=1, use_shmem=1``
(``benchmarks/switch_basins.py``). A restart goes to the combination tried least.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def least_tried(pool: Any, switches: Any, taken: set, ok: list, rng: Any) -> list[Any]:
    """Masks over ``pool``, one per combination of the ``switches``' values among its rows, the
    combination with the fewest routes in ``taken`` first (ties in ``rng``'s order); a
    combination where two or more routes were tried and none of ``ok`` (built) has it is left
    out: no code path there."""
    import numpy as np

    tried = Counter(tuple(t[d] for d in switches) for t in taken if t is not None)
    built = Counter(tuple(t[d] for d in switches) for t in ok)
    keys = [tuple(int(v) for v in row) for row in pool[:, switches]]
    order = sorted(set(keys), key=lambda k: (tried[k], rng.random()))
    return [np.array([k == key for k in keys]) for key in order
            if not (tried[key] >= 2 and not built[key])]
