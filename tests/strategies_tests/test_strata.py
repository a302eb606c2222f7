"""``strategies._strata.least_tried``: the combinations of switch values, fewest tried first,
without one where two or more were tried and none built."""

from __future__ import annotations

import numpy as np

from gptuner_core.strategies._strata import least_tried


def test_the_combination_tried_least_comes_first_and_one_that_never_built_is_left_out():
    # knobs: a (4 values), s and t (switches, columns 1 and 2)
    pool = np.array([[a, s, t] for a in range(4) for s in (0, 1) for t in (0, 1)])
    taken = {(0, 0, 0), (1, 0, 0), (2, 0, 0), (0, 0, 1), (0, 1, 0), (1, 1, 0), None}
    ok = [(0, 0, 0), (1, 0, 0), (0, 0, 1)]  # s=1, t=0: two tried, none built
    masks = least_tried(pool, np.array([1, 2]), taken, ok, np.random.default_rng(0))
    combos = [tuple(pool[m][0, 1:]) for m in masks]
    assert combos == [(1, 1), (0, 1), (0, 0)]  # 0, 1 and 3 tried; (1, 0) left out
    assert all(m.sum() == 4 for m in masks)  # every row of the combination, and no other


def test_ties_are_broken_by_the_generator():
    pool = np.array([[a, s] for a in range(3) for s in (0, 1)])
    firsts = {int(pool[least_tried(pool, np.array([1]), set(), [], np.random.default_rng(seed))[0]][0, 1])
              for seed in range(20)}
    assert firsts == {0, 1}
