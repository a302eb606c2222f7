"""Issue 25, item 5: budgets and ETAs that keep their word. Quoted: "--time-budget 5m ended at
349 s" (re-validation started a round the budget could not hold) and "ETA 1m04 announced, 5m41
taken" (the ETA left re-validation out). Pure functions and the real sequential re-validation with
an injected clock: behaviour, not timing."""

from __future__ import annotations

from gptuner_core.engine.decide.verdict import from_sequential
from gptuner_core.engine.loop.eta import eta_s
from gptuner_core.engine.loop.eta import per_route_s
from gptuner_core.engine.loop.eta import reserve_s
from gptuner_core.measurement import SequentialPlan
from gptuner_core.measurement import revalidate_sequential


def test_eta_counts_revalidation_and_the_time_budget():
    per = per_route_s([2.0, 4.0, 0.0])
    assert per == 3.0
    reserve = reserve_s(per, top_k=3, contenders=5, min_rounds=4)
    assert reserve == 4 * 4 * 3.0  # 4 rounds of the default and 3 contenders
    assert reserve_s(per, top_k=0, contenders=5, min_rounds=4) == 0.0
    # 10 candidates left at 5 s each, then re-validation's first rounds
    assert eta_s(done=10, total=20, per_candidate=5.0, reserve=reserve, elapsed=50.0,
                 time_budget=None) == 50.0 + reserve
    # a time budget caps the screening part: the ETA never promises past the budget
    assert eta_s(done=10, total=200, per_candidate=5.0, reserve=reserve, elapsed=50.0,
                 time_budget=300.0) == 300.0 - 50.0


class Clock:
    """Seconds advanced by each measurement (an injected clock, no sleeping)."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_revalidation_never_starts_a_round_the_budget_cannot_hold():
    clock = Clock()

    def measure(number: int, round_index: int) -> list[float]:
        clock.t += 10.0  # each fresh-process measurement takes 10 s
        return [1.0 if number == 0 else 0.9] * 5

    plan = SequentialPlan(min_rounds=4, max_rounds=12, max_time_s=15.0)
    res = revalidate_sequential([1, 2], 0, measure, plan, clock=clock, per_route_hint_s=10.0)
    assert res.rounds == 0 and clock.t == 0.0 and res.stop_reason == "max_time"
    win = from_sequential(res)
    assert win.verdict.value == "inconclusive" and "time budget" in win.sentence()
    plan = SequentialPlan(min_rounds=4, max_rounds=12, max_time_s=95.0)
    res = revalidate_sequential([1, 2], 0, measure, plan, clock=clock, per_route_hint_s=10.0)
    assert clock.t <= 95.0 and res.rounds == 3  # three rounds of three routes fit; a fourth would not
