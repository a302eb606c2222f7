"""Two-knob adjacent moves for ``hybrid``'s climbs (``pair_moves``, issue 40 item 3).

A one-off move changes one knob; from some routes a faster one is reached only by changing two
numeric knobs together, each to the value next to its own (on convolution ``tile_size_x`` 2 -> 1
with ``tile_size_y`` 4 -> 3, or ``block_size_x`` 48 -> 32 with ``block_size_y`` 8 -> 4), where
each knob alone is slower. A *pair move* moves two numeric knobs (three or more values) one step
each in their value order, in any of the four directions: a small neighbourhood (pairs of knobs
x 4). The pair moves take turns with the knobs (``local_order=knobs``) as one more knob, whose
count is the centre's pair moves tried so far, and the climb scores them as it scores its one-off
moves (the GP's expected improvement over the centre times P(builds), among those likely to
build). By steepest descent over the recorded convolution A100 space, the one-off moves lead
9.2 % of the routes to the optimum and the one-off and pair moves 15.3 % (inside the optimum's
combination of switch values 21.8 and 39.9 %; A6000 80.0 and 98.5 %). They leave A100's basins
at 93.1, 88.6 and 85.8 % as they are: no pair move from them is faster.
"""

from __future__ import annotations

from typing import Any

from gptuner_core.strategies._base import StrategyOption


OPTIONS = {
    "pair_moves": StrategyOption(
        description="local moves also move two numeric knobs one value each, taking turns with "
        "the knobs as one more knob",
        default=True, type=bool,
    ),
}


def value_orders(terms: Any, var: list[int]) -> list[Any]:
    """Per variable knob, its value indices in numeric order (``None``: a switch or not numeric)."""
    import numpy as np

    from gptuner_core.strategies._features import _numeric

    out = []
    for i in var:
        values = terms[i].values
        numeric = len(values) > 2 and _numeric(values)
        out.append(np.argsort([float(v) for v in values], kind="stable") if numeric else None)
    return out


def adjacent_pairs(centre: tuple[int, ...], orders: list[Any]) -> Any:
    """Routes that move two numeric knobs of ``centre`` one step each in their value order."""
    import numpy as np

    steps = []  # per numeric knob: the knob, and its indices one step down and up
    for d, order in enumerate(orders):
        if order is None:
            continue
        rank = int(np.flatnonzero(order == centre[d])[0])
        steps.append((d, [int(order[r]) for r in (rank - 1, rank + 1) if 0 <= r < len(order)]))
    rows = []
    for a in range(len(steps)):
        for b in range(a + 1, len(steps)):
            (da, near_a), (db, near_b) = steps[a], steps[b]
            for va in near_a:
                for vb in near_b:
                    row = list(centre)
                    row[da], row[db] = va, vb
                    rows.append(row)
    return np.array(rows, dtype=np.int64).reshape(-1, len(centre))


def untaken(rows: Any, taken: set) -> Any:
    """``rows`` without repeats and without the routes in ``taken``."""
    import numpy as np

    if not len(rows):
        return rows
    rows = np.unique(rows, axis=0)
    return rows[[tuple(int(j) for j in r) not in taken for r in rows]]


class PairMoves:
    """``hybrid``'s pair moves: added to a local turn's pool, and their place in the knobs' turns."""

    def __init__(self, strategy: Any) -> None:
        self.on = bool(strategy.opts["pair_moves"])
        self.orders = value_orders(strategy.space.terms, strategy._var) if self.on else []
        self._last: tuple[tuple[int, ...] | None, Any] = (None, None)  # a centre and its pair moves

    def _around(self, centre: tuple[int, ...]) -> Any:
        """:func:`adjacent_pairs` of ``centre``, computed once for a local turn's two calls."""
        if self._last[0] != centre:
            self._last = (centre, adjacent_pairs(centre, self.orders))
        return self._last[1]

    def pool(self, pool: Any, centre: tuple[int, ...], taken: set) -> Any:
        """A local turn's ``pool`` and the centre's untried pair moves."""
        import numpy as np

        pairs = untaken(self._around(centre), taken) if self.on else pool[:0]
        return np.vstack([pool, pairs]) if len(pairs) else pool

    def turns(self, turn: Any, pool: Any, centre: tuple[int, ...], taken: set) -> Any:
        """``turn`` (``HybridStrategy._knobs_in_turn``) with the pair moves of ``pool`` as one
        more knob: their count is the centre's pair moves tried so far."""
        import numpy as np

        if not self.on:
            return turn
        near = {tuple(int(j) for j in r) for r in self._around(centre)}
        mine = np.array([tuple(int(j) for j in r) in near for r in pool])
        if mine.any():
            turn = turn.copy()
            turn[mine] = len(near & taken)
        return turn
