"""``auto`` on bo's synthetic recording (512 routes): which strategy it runs, and that it is it."""

from __future__ import annotations

import importlib.util

import pytest

from gptuner_core.engine.loop.simulate import simulate
from gptuner_core.recording import Recording
from gptuner_core.strategies import describe_strategies
from gptuner_core.strategies import get_strategy
from gptuner_core.strategies.auto import choose
from tests.strategies_tests.test_bo import recording


@pytest.fixture(scope="module")
def rec() -> Recording:
    return recording()


def test_the_switch_rule():
    """fast_tpe up to ``switch_at`` routes (inclusive), hybrid above, hybrid without optuna."""
    assert choose(1000, 1000) == "fast_tpe"
    assert choose(1001, 1000) == "hybrid"
    assert choose(48, 1000) == "fast_tpe"
    assert choose(10240, 1000) == "hybrid"
    assert choose(48, 1000, optuna_available=False) == "hybrid"


@pytest.mark.parametrize(("switch_at", "inner"), [(1000, "fast_tpe"), (511, "hybrid")])
def test_it_runs_the_chosen_strategy_unchanged(rec, switch_at, inner):
    """The 512-route space: at or under ``switch_at`` the same proposals as fast_tpe, above it
    the same as hybrid (same seed, same budget), each labelled with the strategy that made it."""
    auto = simulate("auto", rec, 30, seed=4, budget_fraction=0.0, switch_at=switch_at)
    alone = simulate(inner, rec, 30, seed=4, budget_fraction=0.0)
    assert [s.route for s in auto.trace] == [s.route for s in alone.trace]
    assert {s.info.get("auto") for s in auto.trace} == {inner}
    assert get_strategy("auto", rec.expression, db=rec.db, switch_at=switch_at).chosen == inner


def test_without_optuna_it_runs_hybrid(rec, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "optuna" else real(name, *a))
    strategy = get_strategy("auto", rec.expression, db=rec.db)
    assert strategy.chosen == "hybrid"


def test_seeds_give_different_runs_on_a_large_space(rec):
    runs = [simulate("auto", rec, 25, seed=s, budget_fraction=0.0, switch_at=100) for s in range(3)]
    assert len({tuple(step.route for step in r.trace) for r in runs}) == 3


def test_the_harness_is_honest(rec):
    """Same seed, a recording that agrees only on the routes asked: the same proposals."""
    first = simulate("auto", rec, 40, seed=3, budget_fraction=0.0, switch_at=100)
    other = recording(scramble_except={s.route for s in first.trace})
    second = simulate("auto", other, 40, seed=3, budget_fraction=0.0, switch_at=100)
    assert [s.route for s in second.trace] == [s.route for s in first.trace]


def test_it_stops_by_the_chosen_strategys_rule(rec):
    """``budget_fraction`` reaches the chosen strategy: both stop where they would alone."""
    for switch_at in (1000, 100):
        auto = simulate("auto", rec, 500, seed=1, budget_fraction=0.1, switch_at=switch_at)
        inner = "fast_tpe" if switch_at == 1000 else "hybrid"
        alone = simulate(inner, rec, 500, seed=1, budget_fraction=0.1)
        assert auto.builds_used == alone.builds_used < 500


def test_described_with_its_rule():
    entry = next(e for e in describe_strategies() if e["name"] == "auto")
    assert "fast_tpe" in entry["summary"] and "hybrid" in entry["summary"]
    assert entry["options"]["switch_at"]["default"] == 1000
