"""Several measured shapes, one score: minimax (the worst shape) or a weighted traffic mix."""

from __future__ import annotations

import numpy as np
import pytest

from gptuner_core.errors import ConfigError
from gptuner_core.measurement import ShapeObjective
from gptuner_core.measurement import shape_speedup


def test_minimax_is_the_worst_shape_and_weighted_is_the_mix_time():
    """A route 2x faster at batch 1 and 0.8x at batch 32: minimax says 0.8x (never recommend
    it); a mix of 9 batch-1 requests per batch-32 request spends 9*2+10 ms vs 9*1+12.5 ms."""
    default, candidate = (2.0, 10.0), (1.0, 12.5)
    assert ShapeObjective.parse("minimax", shapes=2).combine(default, candidate) == pytest.approx(0.8)
    mix = ShapeObjective.parse("weighted:9,1", shapes=2)
    assert mix.combine(default, candidate) == pytest.approx((9 * 2 + 10) / (9 * 1 + 12.5))
    assert mix.text() == "weighted:9,1"


@pytest.mark.parametrize(("text", "needle"), [
    ("fastest", "must be 'minimax' or 'weighted:W1,W2,...' (got 'fastest')"),
    ("weighted:1", "gives 1 weight(s) for 2 measured shape(s)"),
    ("weighted:1,-2", "weights must be numbers > 0"),
    ("weighted:a,b", "weights must be numbers > 0"),
    ("minimax:3", "must be 'minimax'"),
])
def test_bad_objectives_are_one_line(text, needle):
    with pytest.raises(ConfigError, match=None) as err:
        ShapeObjective.parse(text, shapes=2)
    assert needle in str(err.value)


def test_the_overall_ci_is_a_per_shape_bootstrap_around_the_point():
    rng = np.random.default_rng(0)
    d = [rng.normal(2.0, 0.05, 200), rng.normal(10.0, 0.2, 200)]
    c = [rng.normal(1.0, 0.05, 200), rng.normal(12.5, 0.2, 200)]
    est = shape_speedup(ShapeObjective(), d, c)
    assert est.point == pytest.approx(min(np.median(d[0]) / np.median(c[0]), np.median(d[1]) / np.median(c[1])))
    assert est.ci is not None and est.ci[0] < est.point < est.ci[1] and est.ci[1] < 1.0
    assert est.per_shape[0] == pytest.approx(2.0, rel=0.05) and est.per_shape_ci[0][0] > 1.5
    again = shape_speedup(ShapeObjective(), d, c)
    assert again == est  # seeded: the same samples give the same interval


def test_one_sample_gives_a_point_and_no_interval():
    est = shape_speedup(ShapeObjective(), [[2.0], [4.0, 4.4]], [[1.0], [1.0, 1.1]])
    assert est.point == pytest.approx(2.0) and est.ci is None


def test_shapes_must_match_on_both_sides():
    with pytest.raises(ConfigError, match="same measured shapes"):
        shape_speedup(ShapeObjective(), [[1.0, 1.1]], [[1.0, 1.1], [2.0, 2.1]])
