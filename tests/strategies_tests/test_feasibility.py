"""The failure model (issue 40 item 2): what cannot build, learned from the routes tried."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

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


def test_the_fit_converges_where_plain_newton_steps_diverge():
    """Few routes, many features, most routes built (as in a convolution space's first 30 builds):
    a plain Newton step from the intercept raises the penalised loss (here the second one). The
    fit halves such a step until the loss falls: after any number of steps its loss is no higher
    than after fewer, and the probabilities it gives are finite and inside (0, 1)."""
    from gptuner_core.strategies._feasibility import logistic_mode
    from gptuner_core.strategies._feasibility import penalised_loss

    rng = np.random.default_rng(93)
    x = rng.integers(0, 2, (38, 75)).astype(float)
    built = (rng.random(38) < 0.85).astype(float)
    a = np.hstack([np.ones((38, 1)), (x - x.mean(0)) / (x.std(0) + 1e-6)])
    reg = np.full(a.shape[1], 3.0)
    reg[0] = 1e-6

    w = np.zeros(a.shape[1])
    w[0] = np.log(built.mean() / (1 - built.mean()))
    plain = [penalised_loss(a, built, reg, w)]
    for _ in range(4):  # the construction: plain Newton steps, one of which raises the loss
        p = 1.0 / (1.0 + np.exp(-(a @ w)))
        hess = (a * (p * (1 - p))[:, None]).T @ a + np.diag(reg)
        w = w - np.linalg.solve(hess, a.T @ (p - built) + reg * w)
        plain.append(penalised_loss(a, built, reg, w))
    assert any(b > a_ for a_, b in itertools.pairwise(plain)), plain

    losses = [penalised_loss(a, built, reg, logistic_mode(a, built, reg, steps))
              for steps in range(6)]
    assert losses[0] == plain[0]
    assert all(b <= a_ + 1e-12 for a_, b in itertools.pairwise(losses)), losses
    grad_end = logistic_mode(a, built, reg, 25)
    p = 1.0 / (1.0 + np.exp(-(a @ grad_end)))
    assert np.abs(a.T @ (p - built) + reg * grad_end).max() < 1e-4  # at the mode
    share = logistic_share(x, built, x)
    assert np.all(np.isfinite(share)) and np.all((share > 0) & (share < 1))
    assert np.mean((share >= 0.5) == (built == 1.0)) >= 0.8  # it fits the outcomes it saw


def test_one_failure_is_shared_among_the_pairs_that_could_explain_it():
    """A failure whose 6 pairs of values were never seen counts 1/6 against each: a route with
    one of those pairs (the others new) stays a candidate (at least 0.8 of a fresh route, the
    strategies' bar), where a whole failure per pair judged it 1/2. A pair that alone explains
    two failures (their other pairs built elsewhere) takes their whole blame and drops to 1/3."""
    sizes = np.array([4, 4, 4, 4])
    failed = np.array([[0, 0, 0, 0]])
    probe = np.array([[0, 0, 1, 1]])  # shares the pair (a=0, b=0) with the failure only
    assert pairwise_share(failed, np.zeros(1), probe, sizes)[0] >= 0.8
    assert pairwise_share(failed, np.zeros(1), probe, sizes, share=False)[0] == 0.5

    rows = np.array([[0, 0, 1, 2], [0, 0, 2, 1],  # failed: (a=0, b=0) is their one new pair
                     [0, 1, 1, 2], [1, 0, 1, 2], [0, 1, 2, 1], [1, 0, 2, 1]])  # built
    built = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    p = pairwise_share(rows, built, np.array([[0, 0, 3, 3], [0, 1, 3, 3]]), sizes)
    assert p[0] == pytest.approx(1 / 3)
    assert p[1] >= 0.8


def test_a_failure_the_sizes_explain_does_not_bar_the_switches_it_had():
    """Convolution A100 (issue 40 item 3): the first routes tried, blocks over the thread limit,
    happened to have ``read_only=1, use_shmem=1``, and the pairwise table barred that pair for
    good, where the optimum is. Here two block sizes (a route builds when x * y <= 1024) and two
    switches: the only routes with both switches on are over the limit. The sizes' model
    explains those failures, so a small block with both switches on stays a candidate
    (``learned_share``), while a block over the limit stays barred."""
    from gptuner_core.strategies._feasibility import learned_share

    values = [SIZES, SIZES, ["0", "1"], ["0", "1"]]
    tables, sizes = size_features(values), np.array([len(v) for v in values])
    rng = np.random.default_rng(1)
    small = [(a, b, s, t) for a in range(11) for b in range(11) for s in range(2) for t in range(2)
             if a + b <= 10 and (s, t) != (1, 1)]
    big = [(a, b, 1, 1) for a in range(11) for b in range(11) if a + b > 10]
    rows = np.array([small[i] for i in rng.choice(len(small), 30, replace=False)]
                    + [big[i] for i in rng.choice(len(big), 6, replace=False)])
    built = np.array([float(2**a * 2**b <= 1024) for a, b, _, _ in rows])
    probe = np.array([[3, 4, 1, 1], [8, 8, 1, 1]])  # 128 threads / 65,536 threads, both switches on
    pairs_only = pairwise_share(rows, built, probe, sizes)
    p = learned_share(rows, built, probe, sizes, tables)
    assert pairs_only[0] < 0.2  # the pair table alone bars the small block for its switches
    assert p[0] >= 0.4, p  # explained away: as likely to build as not (0.14 without)
    assert p[1] <= 0.2, p
