"""The failure model (issue 40 item 2): what cannot build, learned from the routes tried."""

from __future__ import annotations

import itertools

import numpy as np

from gptuner_core.strategies._feasibility import logistic_share
from gptuner_core.strategies._feasibility import pairwise_share
from gptuner_core.strategies._feasibility import quadratic
from gptuner_core.strategies._feasibility import size_features


SIZES = [str(2**k) for k in range(11)]  # 1 .. 1024


def limit_space():
    """Two block sizes and a switch: a route builds when x * y <= 1024 (a thread limit)."""
    rows = np.array(list(itertools.product(range(11), range(11), range(2))))
    ok = np.array([2**a * 2**b <= 1024 for a, b, _ in rows], dtype=float)
    tables = size_features([SIZES, SIZES, ["off", "on"]])
    return rows, ok, tables


def test_a_size_limit_reaches_pairs_never_tried():
    """From 50 routes, the logistic model on log sizes predicts the builds of pairs of values it
    never saw; the pairwise table can only call them unknown (1.0)."""
    rows, ok, tables = limit_space()
    rng = np.random.default_rng(0)
    seen = rng.choice(len(rows), 50, replace=False)
    pairs_seen = {(a, b) for a, b, _ in rows[seen]}
    unseen = np.array([i for i, (a, b, _) in enumerate(rows) if (a, b) not in pairs_seen])
    p = logistic_share(quadratic(rows[seen], tables), ok[seen], quadratic(rows[unseen], tables))
    accuracy = np.mean((p >= 0.5) == (ok[unseen] == 1.0))
    assert accuracy >= 0.9, accuracy
    pair = pairwise_share(rows[seen], ok[seen], rows[unseen], np.array([11, 11, 2]))
    assert np.mean(pair[ok[unseen] == 0.0] >= 0.5) > 0.5  # most failing unseen pairs look fine to it


def test_far_from_the_data_it_is_unsure_not_certain():
    """Moderated by the weights' spread: a corner no route came near is nearer 1/2 than the
    routes it learned from (it does not extrapolate to 0 or 1)."""
    rows, ok, tables = limit_space()
    near = np.array([i for i, (a, b, _) in enumerate(rows) if a <= 4 and b <= 7])  # ok and failing
    corner = np.array([i for i, (a, b, _) in enumerate(rows) if a == 10 and b == 0])
    x = quadratic(rows[near], tables)
    p_near = logistic_share(x, ok[near], x)
    p_corner = logistic_share(x, ok[near], quadratic(rows[corner], tables))
    assert np.all(np.abs(p_corner - 0.5) < np.abs(p_near - 0.5).max())


def test_one_outcome_only_gives_its_share():
    rows, _, tables = limit_space()
    x = quadratic(rows[:5], tables)
    assert np.all(logistic_share(x, np.ones(5), x) == 1.0)
    assert np.all(logistic_share(x, np.zeros(5), x) == 0.0)


def test_unordered_values_are_one_hot_and_sizes_by_log():
    tables = size_features([["16", "32", "64"], ["a", "b", "c"], ["0", "1", "3"]])
    assert np.allclose(tables[0][:, 0], [0.0, 0.5, 1.0])  # log2: 4, 5, 6
    assert tables[1].shape == (3, 3) and np.allclose(tables[1], np.eye(3))
    assert np.allclose(tables[2][:, 0], [0.0, 0.5, 1.0])  # a 0 among them: by position
