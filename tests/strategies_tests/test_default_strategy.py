"""The default strategy on real recorded full sweeps of the bundled samples (benchmarks/data)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gptuner_core.engine.loop.simulate import simulate
from gptuner_core.recording import load_recording
from gptuner_core.strategies import DEFAULT_STRATEGY


DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
SWEEPS = sorted(DATA.glob("ort_*_full.json"))


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_default_finds_near_optimum_with_a_fifth_of_the_builds(path):
    """>= 97 % of the exhaustive optimum's speed-up with <= 20 % of the builds, 5 seeds."""
    rec = load_recording(path)
    size = rec.expression.count("full")
    optimum, _ = rec.optimum()
    budget = math.ceil(0.2 * size)
    for seed in range(5):
        res = simulate(DEFAULT_STRATEGY, rec, budget, seed=seed, budget_fraction=0.0)
        assert res.builds_used <= budget
        assert res.best_speedup >= 0.97 * optimum, (seed, res.best_speedup, optimum)


def test_climbing_finds_an_interaction_that_one_offs_cannot():
    """On the CNN sweep the best route needs quantization on AND the first conv skipped."""
    rec = load_recording(DATA / "ort_cnn_digits_full.json")
    size = rec.expression.count("full")
    budget = math.ceil(0.1 * size)
    fast = simulate("fast", rec, budget)
    climbed = simulate("fast_tpe", rec, budget, seed=0, budget_fraction=0.0)
    no_climb = simulate("fast_tpe", rec, budget, seed=0, budget_fraction=0.0, climb=False)
    assert climbed.best_speedup > fast.best_speedup
    assert climbed.best_speedup >= no_climb.best_speedup
    assert any(s.info.get("phase") == "climb" for s in climbed.trace)
