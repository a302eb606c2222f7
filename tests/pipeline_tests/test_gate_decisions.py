"""The gate's decision rule by simulation: the plan ``run_gate`` uses and the mapping ``decide``
applies, on synthetic fresh-process measurements with this machine's between-process noise.

Issue 17's bar: on an unchanged model at most 1 false regression in 20 gates; a real 10 %
regression caught in at least 19 of 20. Measured on this machine (benchmarks/gate_quality.py),
per-process medians wander by about 3 % (the 99 % interval after 20 rounds was about +-2.6 %);
the simulations use 3-8 % so they are at least as hard as what was seen. The rule the gate had
before (the whole interval above 1 + threshold) caught the two regression cases below in 133 and
58 of 200.
"""

from __future__ import annotations

import numpy as np
import pytest

from gptuner_core.bundle.gate import Decision
from gptuner_core.bundle.gate import GateSettings
from gptuner_core.bundle.gate import decide
from gptuner_core.bundle.gate import gate_plan
from gptuner_core.bundle.measure import BASELINE
from gptuner_core.bundle.measure import CANDIDATE
from gptuner_core.measurement import SequentialPlan
from gptuner_core.measurement import revalidate_sequential


def _gates(slowdown: float, cv: float, count: int, settings: GateSettings) -> dict[Decision, int]:
    """``count`` simulated gates: the candidate ``slowdown`` x the baseline's latency, every
    fresh process offset by lognormal(0, cv), every sample by a further 2 %."""
    tally: dict[Decision, int] = {}
    for seed in range(count):
        rng = np.random.default_rng(1000 + seed)
        true_ms = {CANDIDATE: slowdown, BASELINE: 1.0}

        def measure_fresh(number: int, round_index: int, rng=rng, true_ms=true_ms) -> list[float]:
            return list(true_ms[number] * rng.lognormal(0.0, cv) * rng.lognormal(0.0, 0.02, 50))

        res = revalidate_sequential([BASELINE], CANDIDATE, measure_fresh, gate_plan(settings), seed=seed)
        decision, _ = decide(res.contenders[0].estimate, res.verdict.value, settings.threshold)
        tally[decision] = tally.get(decision, 0) + 1
    return tally


class TestDecisionQualityBySimulation:
    @pytest.mark.parametrize(("slowdown", "cv"), [(1.10, 0.05), (1.07, 0.03)])
    def test_a_real_regression_is_caught_in_at_least_19_of_20(self, slowdown: float, cv: float) -> None:
        """Against the default 5 % threshold and 20 rounds, 200 gates each."""
        tally = _gates(slowdown, cv, 200, GateSettings())
        assert tally.get(Decision.REGRESSION, 0) >= 190, tally

    @pytest.mark.parametrize("cv", [0.03, 0.08])
    def test_an_unchanged_model_is_a_false_regression_at_most_1_in_20(self, cv: float) -> None:
        tally = _gates(1.0, cv, 200, GateSettings())
        assert tally.get(Decision.REGRESSION, 0) <= 10, tally

    def test_a_slow_down_below_the_threshold_is_not_a_regression(self) -> None:
        """Significantly slower but by an estimated 2 %: inside the practical threshold."""
        tally = _gates(1.02, 0.03, 100, GateSettings())
        assert tally.get(Decision.REGRESSION, 0) <= 5, tally

    def test_a_faster_model_passes_and_is_never_a_regression(self) -> None:
        """The pipeline's question is answered ("no slow-down") as soon as it can be; an
        improvement is claimed only when the interval shows it."""
        tally = _gates(1 / 1.2, 0.05, 100, GateSettings())
        assert set(tally) <= {Decision.IMPROVEMENT, Decision.NO_CHANGE}, tally


class TestPlan:
    def test_the_plan_follows_the_settings(self) -> None:
        plan = gate_plan(GateSettings(threshold=0.1, confidence=0.9, min_rounds=3, max_rounds=12, max_time_s=60))
        assert (plan.min_effect, plan.confidence, plan.min_rounds, plan.max_rounds, plan.max_time_s) == (
            0.1, 0.9, 3, 12, 60)
        assert plan.winner_floor == 0.0, "a regression is a significant slow-down estimated beyond the threshold"

    def test_a_plan_without_a_floor_keeps_the_re_validation_rule(self) -> None:
        """Re-validation's winner still needs its whole interval above 1 + min_effect."""
        assert SequentialPlan().winner_floor is None

    @pytest.mark.parametrize("floor", [-0.1, 0.02, "x"])
    def test_a_floor_outside_0_to_min_effect_is_refused(self, floor: object) -> None:
        from gptuner_core.errors import ConfigError

        with pytest.raises(ConfigError, match="winner_floor must be"):
            SequentialPlan(min_effect=0.01, winner_floor=floor)
