"""Sequential re-validation: decides, says "inconclusive" when it cannot, keeps false winners
within alpha under sequential stopping (simulated studies), and finds a real 10 % gain."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError
from gptuner_core.measurement import SequentialPlan
from gptuner_core.measurement import SequentialResult
from gptuner_core.measurement import Verdict
from gptuner_core.measurement import revalidate_sequential
from gptuner_core.measurement.boundaries import look_alphas
from gptuner_core.measurement.boundaries import look_rounds
from gptuner_core.measurement.boundaries import spent
from gptuner_core.measurement.paired import log_ratio_interval
from gptuner_core.measurement.paired import signed_rank_k
from gptuner_core.records.confidence import percent


def processes(true_ms: dict[int, float], cv: float, seed: int, *, bimodal: float = 0.0, n: int = 1):
    """A synthetic ``measure_fresh``: each call is one fresh process with a lognormal offset
    (between-process noise); with ``bimodal`` that share of processes runs 2x slower (regimes).
    ``n=1`` returns a single sample per process (statistics must still be defined)."""
    rng = np.random.default_rng(seed)

    def measure_fresh(number: int, round_index: int) -> list[float]:
        factor = rng.lognormal(0.0, cv) * (2.0 if bimodal and rng.random() < bimodal else 1.0)
        return list(true_ms[number] * factor * rng.lognormal(0.0, 0.02, n))

    return measure_fresh


def studies(true_ms: dict[int, float], cv: float, count: int, plan: SequentialPlan, **kw) -> dict:
    tally: dict = {}
    rounds = []
    for s in range(count):
        res = revalidate_sequential(sorted(true_ms)[1:], 0, processes(true_ms, cv, s, **kw), plan, seed=s)
        tally[res.verdict] = tally.get(res.verdict, 0) + 1
        rounds.append(res.rounds)
    tally["mean_rounds"] = float(np.mean(rounds))
    return tally


class TestErrorControlBySimulation:
    """alpha = 0.05: false winners are bounded by alpha / 2 = 2.5 % per study by construction;
    the brief's bar is <= alpha. Seeds are fixed, so these figures are reproducible."""

    @pytest.mark.slow
    def test_aa_null_false_winners_within_alpha(self) -> None:
        """3 contenders identical to the default, 8 % between-process noise, 400 studies,
        looks at rounds 4,6,9,13,20: at most 5 % declare a winner."""
        t = studies({0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0}, 0.08, 400, SequentialPlan())
        assert t.get(Verdict.WINNER, 0) <= 0.05 * 400
        assert t.get(Verdict.WINNER, 0) <= 0.025 * 400 + 2  # the union bound's alpha / 2

    @pytest.mark.slow
    def test_bimodal_null_false_winners_within_alpha(self) -> None:
        """Regimes: 30 % of processes run 2x slower (ONNX Runtime 0.42 vs 0.84 ms): <= 5 %."""
        t = studies({0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0}, 0.03, 400, SequentialPlan(), bimodal=0.3)
        assert t.get(Verdict.WINNER, 0) <= 0.05 * 400

    def test_obrien_fleming_null_within_alpha(self) -> None:
        """The other spending function keeps the same bound."""
        plan = SequentialPlan(spending="obrien-fleming")
        t = studies({0: 1.0, 1: 1.0, 2: 1.0}, 0.08, 200, plan)
        assert t.get(Verdict.WINNER, 0) <= 0.05 * 200

    def test_naive_peeking_would_inflate_false_winners(self) -> None:
        """The same null studies looked at after every round at the full 95 % level (no
        spending, no Bonferroni) stop on a false winner far more often: why spending is needed."""
        false = 0
        for s in range(200):
            mf = processes({0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0}, 0.08, s)
            med: dict[int, list[float]] = {r: [] for r in range(4)}
            for rnd in range(20):
                for r in range(4):
                    med[r].append(float(np.median(mf(r, rnd))))
                if rnd >= 2 and any(
                    log_ratio_interval(np.log(np.divide(med[0], med[c])), 0.05, "t").low > np.log(1.01)
                    for c in (1, 2, 3)
                ):
                    false += 1
                    break
        assert false > 0.15 * 200

    def test_power_on_a_10_percent_gain(self) -> None:
        """One contender 10 % faster, 5 % process noise, 200 studies: >= 90 % winners (96 %)."""
        t = studies({0: 1.0, 1: 1 / 1.1}, 0.05, 200, SequentialPlan())
        assert t.get(Verdict.WINNER, 0) >= 0.9 * 200

    def test_power_under_regimes(self) -> None:
        """10 % faster, 30 % of processes in a 2x slower regime: the same-regime comparison
        ("matched") still finds it in >= 85 % of 200 studies (180); the signed-rank interval over
        all rounds finds it in < 50 % (47), the t-interval in 23."""
        true = {0: 1.0, 1: 1 / 1.1}
        auto = studies(true, 0.03, 200, SequentialPlan(), bimodal=0.3)
        rank = studies(true, 0.03, 200, SequentialPlan(method="rank"), bimodal=0.3)
        assert auto.get(Verdict.WINNER, 0) >= 0.85 * 200
        assert rank.get(Verdict.WINNER, 0) < 0.5 * 200

    def test_power_with_equivalent_contenders_beside_it(self) -> None:
        """A 10 % faster route among two equivalent ones, 3 % noise: the fast one wins >= 97 %."""
        t = studies({0: 1.0, 1: 1 / 1.1, 2: 1.0, 3: 1.0}, 0.03, 100, SequentialPlan())
        assert t.get(Verdict.WINNER, 0) >= 97


class TestDecisions:
    def test_a_clear_gain_is_decided_before_the_budget(self) -> None:
        """A 25 % faster route, 3 % noise: winner at an early look, far below max_rounds."""
        res = revalidate_sequential([1, 2], 0, processes({0: 1.0, 1: 0.8, 2: 1.0}, 0.03, 0),
                                    SequentialPlan(max_rounds=30))
        assert res.verdict is Verdict.WINNER and res.winner == 1 and res.stop_reason == "decided"
        assert res.rounds < 10
        assert res.contender(1).estimate.low > 1.01
        assert "route #1 is faster than the default" in res.message
        # issue 39 item 3: the message names the look's wider interval and the study's own
        # confidence, the one the headline states (it read "99.71 % CI" beside "95 %")
        look = res.contender(1).estimate.confidence
        assert look > 0.95 and f"{percent(0.95)} confidence over every look and route" in res.message

    def test_a_slower_route_is_not_faster(self) -> None:
        """A route 8 % slower: "not faster" (its interval's upper end is below 1.01), not merely
        "no significant winner"."""
        res = revalidate_sequential([1], 0, processes({0: 1.0, 1: 1.08}, 0.02, 1))
        assert res.verdict is Verdict.NOT_FASTER and res.contender(1).status == "not_faster"
        assert res.contender(1).estimate.high < 1.01
        assert "no route is faster than the default by more than 1%" in res.message

    def test_inconclusive_without_an_interval_asks_for_more_rounds(self) -> None:
        """Seen in the H200 A/A runs: per-process medians 1.7x apart (regimes), 6 rounds, only 2
        of them matched, so no interval; the message said "more rounds would not decide it (the
        estimate sits on the threshold)", the opposite of the truth."""
        rng = np.random.default_rng(3)

        def measure_fresh(number: int, round_index: int) -> list[float]:
            base = 0.34 * (1.7 if rng.random() < 0.4 else 1.0)
            return list(base * (1 + 0.01 * rng.standard_normal(50)))

        res = revalidate_sequential([1], 0, measure_fresh,
                                    SequentialPlan(min_rounds=4, max_rounds=6), seed=0)
        assert res.verdict is Verdict.INCONCLUSIVE
        est = res.contender(1).estimate  # issue 25: a method that can reach the level is used
        assert est.low is not None and "too few for a distribution-free interval" in est.note
        assert "would not decide" not in res.message

    def test_round_budget_gives_inconclusive_with_a_projection(self) -> None:
        """Equivalent routes and a 1 % min-effect cannot be decided in 6 rounds: inconclusive,
        with the rounds that would decide it, never "not faster"."""
        res = revalidate_sequential([1], 0, processes({0: 1.0, 1: 0.97}, 0.08, 3),
                                    SequentialPlan(max_rounds=6))
        assert res.verdict is Verdict.INCONCLUSIVE and res.stop_reason == "max_rounds"
        assert res.projected_rounds is not None and res.projected_rounds > 6
        assert f"about {res.projected_rounds} rounds in all would decide" in res.message
        assert res.winner_meta()["verdict"] == "inconclusive"

    def test_time_budget_stops_between_rounds(self) -> None:
        """A fake clock advancing 0.5 s per read (a measurement reads it twice, the budget check
        once): with a 6 s budget the 4th round is not started because it would end past 6 s."""
        now = itertools.count()
        clock = lambda: float(next(now)) / 2  # noqa: E731
        res = revalidate_sequential([1], 0, processes({0: 1.0, 1: 1.0}, 0.08, 4),
                                    SequentialPlan(max_time_s=6.0), clock=clock)
        assert res.stop_reason == "max_time" and res.verdict is Verdict.INCONCLUSIVE
        assert res.rounds == 3
        assert "inconclusive after 3 rounds (time budget spent)" in res.message

    def test_a_stop_request_cuts_re_validation_short_between_rounds(self) -> None:
        """Issue 39 item 4: Stop during re-validation ends it at the next round (it ran on for
        37 s); the message says it was cut short, and a stop before the first round too."""
        from gptuner_core.records.verdict_text import CUT_SHORT

        done = []
        res = revalidate_sequential([1], 0, processes({0: 1.0, 1: 1.0}, 0.08, 4),
                                    SequentialPlan(max_rounds=10),
                                    on_round=lambda n, _t, _u: done.append(n),
                                    should_stop=lambda: len(done) >= 2)
        assert res.rounds == 2 and res.stop_reason == "stopped"
        assert res.verdict is Verdict.INCONCLUSIVE and CUT_SHORT in res.message
        res = revalidate_sequential([1], 0, processes({0: 1.0, 1: 1.0}, 0.08, 4),
                                    SequentialPlan(max_rounds=10), should_stop=lambda: True)
        assert res.rounds == 0 and CUT_SHORT in res.message
        assert "time budget" not in res.message
        from gptuner_core.engine.decide.verdict import from_sequential

        verdict = from_sequential(res)  # what a page shows first: headline and sentence
        assert "cut short" in verdict.sentence() and "time budget" not in verdict.sentence()
        assert CUT_SHORT in verdict.headline()

    def test_rounds_interleave_active_routes_in_a_fresh_order(self) -> None:
        """Each round runs the default and every undecided contender once; order is shuffled and
        seeded; measure_fresh is called exactly in the reported schedule."""
        calls: list[tuple[int, int]] = []
        inner = processes({0: 1.0, 1: 1.0, 2: 1.0}, 0.05, 0)

        def measure_fresh(number: int, round_index: int) -> list[float]:
            calls.append((number, round_index))
            return inner(number, round_index)

        res = revalidate_sequential([1, 2], 0, measure_fresh, SequentialPlan(max_rounds=8), seed=5)
        assert calls == [(num, i) for i, r in enumerate(res.schedule) for num in r]
        assert all(sorted(r) == [0, 1, 2] for r in res.schedule)
        assert len(set(res.schedule)) > 1

    def test_prefetch_is_told_each_round_and_every_later_one_ahead(self) -> None:
        """``prefetch`` gets, before each round runs, that round's order and every later round's
        as it turns out when nothing is decided meanwhile: the caller starts as many of those
        processes as it has room for, so they load while earlier rounds measure (issue 38: a
        round never waits for compilation). The schedule is the one without prefetch."""
        hints: list[list[tuple[int, int]]] = []
        inner = processes({0: 1.0, 1: 1.0, 2: 1.0}, 0.05, 0)

        def measure_fresh(number: int, round_index: int) -> list[float]:
            return inner(number, round_index)

        measure_fresh.prefetch = hints.append
        plan = SequentialPlan(max_rounds=6)
        res = revalidate_sequential([1, 2], 0, measure_fresh, plan, seed=5)
        plain = revalidate_sequential([1, 2], 0, processes({0: 1.0, 1: 1.0, 2: 1.0}, 0.05, 0), plan, seed=5)
        assert res.schedule == plain.schedule
        assert len(hints) == len(res.schedule)  # one hint per round run
        first = hints[0]
        assert sorted({r for _, r in first}) == list(range(plan.max_rounds))  # every round, at once
        for i, order in enumerate(res.schedule):
            assert [n for n, r in first if r == i] == list(order)  # nothing decided: ahead was right
            assert [n for n, r in hints[i] if r == i] == list(order)
            assert min(r for _, r in hints[i]) == i  # a hint never names a round already run
        assert max(r for hint in hints for _, r in hint) < plan.max_rounds

    def test_single_sample_processes_and_a_failing_contender(self) -> None:
        """One sample per process is fine; a contender that fails is dropped with its error, a
        failing default propagates."""
        inner = processes({0: 1.0, 1: 0.8, 2: 1.0}, 0.03, 0, n=1)

        def measure_fresh(number: int, round_index: int) -> list[float]:
            if number == 2 and round_index == 1:
                raise BackendError("candidate crashed")
            return inner(number, round_index)

        res = revalidate_sequential([1, 2], 0, measure_fresh)
        assert res.contender(2).status == "failed" and "crashed" in res.contender(2).error
        assert res.winner == 1

        def default_fails(number: int, round_index: int) -> list[float]:
            raise BackendError("default crashed")

        with pytest.raises(BackendError, match="default crashed"):
            revalidate_sequential([1], 0, default_fails)

    def test_keep_measuring_until_the_others_are_outclassed_and_report_progress(self) -> None:
        """stop_at_winner=False: after #1 wins, #2 (equal to the default) is measured until its
        interval falls below #1's lower end ("outclassed") or below 1.01; on_round sees every
        round with the contenders still undecided."""
        progress: list[tuple[int, int, tuple[int, ...]]] = []
        res = revalidate_sequential(
            [1, 2], 0, processes({0: 1.0, 1: 0.7, 2: 1.0}, 0.03, 2),
            SequentialPlan(stop_at_winner=False, max_rounds=30),
            on_round=lambda *a: progress.append(a),
        )
        assert res.winner == 1 and res.contender(2).status in ("outclassed", "not_faster")
        assert res.stop_reason == "decided"
        assert [p[0] for p in progress] == list(range(1, res.rounds + 1))
        assert all(p[1] == 30 for p in progress) and progress[-1][2] == ()
        assert res.contender(1).decided_at <= res.contender(2).decided_at

    def test_a_contender_clearly_slower_than_the_leader_stops_being_measured(self) -> None:
        """The default's own processes are noisy (+-25 %), so at the first look nothing is decided
        against it; but #2 and #3 run 1.25x slower than #1 in every round (paired against #1,
        the default's noise cancels): they cannot be the best route, so they are "outclassed" at
        that look and the later rounds measure only the default and #1. Before, every round kept
        measuring all four routes until #1 won (time to decision: two of four processes wasted)."""
        noise = [1.0, 1.3, 0.75, 1.2, 0.8, 1.25, 0.85, 1.3, 0.75, 1.2, 0.8, 1.25, 0.85, 1.1, 0.9, 1.0]

        def measure(number: int, round_index: int) -> list[float]:
            lat = {0: noise[round_index], 1: 0.8, 2: 1.0, 3: 1.0}[number]
            return [lat * (1 + 0.001 * (i % 3)) for i in range(9)]

        res = revalidate_sequential([1, 2, 3], 0, measure, SequentialPlan(max_rounds=16), seed=1)
        first = res.looks[0]
        assert res.contender(1).status in ("winner", "inconclusive") and res.rounds > first, res.message
        for c in (2, 3):
            assert res.contender(c).status == "outclassed" and res.contender(c).decided_at == first
            assert res.contender(c).rounds == first
        assert all(set(r) == {0, 1} for r in res.schedule[first:]), res.schedule

    def test_a_leader_decided_not_faster_makes_the_outclassed_ones_not_faster_too(self) -> None:
        """#2 is outclassed by #1 at the first look; #1 is later decided not faster than the
        default. Nothing is left undecided, so the study says "not faster", not "inconclusive"."""
        def measure(number: int, round_index: int) -> list[float]:
            wobble = 1.0 + (0.25 if round_index % 2 else -0.5) * (0.5 ** round_index)
            lat = {0: 1.0, 1: 1.15 * wobble, 2: 1.5 * wobble}[number]
            return [lat] * 5

        res = revalidate_sequential([1, 2], 0, measure, SequentialPlan(max_rounds=30, method="t"))
        assert res.contender(2).status == "outclassed", [(c.number, c.status) for c in res.contenders]
        assert res.contender(1).status == "not_faster"
        assert res.verdict is Verdict.NOT_FASTER, res.message

    def test_record_round_trips_and_winner_meta_keeps_the_old_keys(self) -> None:
        """to_json/from_json round-trip through JSON; winner_meta has every key the engine
        reads today plus verdict, rounds, method."""
        res = revalidate_sequential([1, 2], 0, processes({0: 1.0, 1: 0.8, 2: 1.0}, 0.03, 0))
        back = SequentialResult.from_json(json.loads(json.dumps(res.to_json())))
        assert back == res
        meta = res.winner_meta()
        assert {"number", "speedup", "ci", "significant", "message", "best", "best_speedup"} <= set(meta)
        assert meta["verdict"] == "winner" and meta["rounds"] == res.rounds
        assert "alpha spending" in meta["method"]

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"min_rounds": 1}, "2 <= min_rounds <= max_rounds"),
            ({"max_rounds": 2}, "2 <= min_rounds <= max_rounds"),
            ({"spending": "linear"}, "spending must be one of"),
            ({"method": "z"}, "method must be one of"),
            ({"max_time_s": 0}, "max_time_s must be"),
        ],
    )
    def test_bad_plans_are_clear_errors(self, kwargs: dict, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            SequentialPlan(**kwargs)


class TestBoundaries:
    def test_spending_adds_up_to_alpha(self) -> None:
        """Both spending functions reach alpha at t = 1 and grow monotonically; the per-look,
        per-contender levels sum to alpha."""
        for kind in ("pocock", "obrien-fleming"):
            values = [spent(t, 0.05, kind) for t in np.linspace(0, 1, 21)]
            assert values[0] == 0 and values[-1] == pytest.approx(0.05)
            assert all(b >= a for a, b in itertools.pairwise(values))
            looks = look_rounds(3, 20)
            assert sum(look_alphas(looks, 20, 0.05, kind, 3)) * 3 == pytest.approx(0.05)
        assert spent(0.2, 0.05, "pocock") > spent(0.2, 0.05, "obrien-fleming")

    def test_look_schedule(self) -> None:
        assert look_rounds(3, 20) == (3, 4, 6, 9, 13, 20)
        assert look_rounds(2, 2) == (2,)

    def test_signed_rank_critical_values_match_enumeration(self) -> None:
        """k from the exact null distribution equals brute force over all 2^n sign patterns."""
        for n in (5, 8, 10):
            w = [sum(i + 1 for i in range(n) if mask >> i & 1) for mask in range(1 << n)]
            cdf = lambda v: sum(x <= v for x in w) / len(w)  # noqa: B023, E731
            k = signed_rank_k(n, 0.05)
            assert (k == 0 or cdf(k - 1) <= 0.025) and cdf(k) > 0.025

    def test_rank_interval_covers_and_flags_too_few_rounds(self) -> None:
        """The rank interval holds the Hodges-Lehmann centre; 4 rounds cannot reach 95 %."""
        iv = log_ratio_interval(np.log([1.1, 1.2, 1.05, 1.15, 1.12, 1.3, 1.08, 1.11]), 0.05, "rank")
        assert iv.low < iv.centre < iv.high
        few = log_ratio_interval([0.1, 0.2, 0.1, 0.15], 0.05, "rank")
        assert few.low is None and "cannot reach" in few.note


class TestTiedFinalists:
    """Two finalists that both beat the default and that the rounds cannot separate: the named
    one must not be whichever timing noise put ahead (issue 38: re-running a study named the
    other route)."""

    TIE = {0: 1.0, 1: 0.5, 2: 0.5}

    def test_a_tie_names_the_same_route_whatever_the_noise(self) -> None:
        named, leaders = set(), set()
        for seed in range(12):
            res = revalidate_sequential([1, 2], 0, processes(self.TIE, 0.05, seed), SequentialPlan(),
                                        seed=seed, prefer=lambda n: {1: (1,), 2: (0,)}[n])
            assert res.verdict is Verdict.WINNER
            named.add(res.winner)
            leaders.add(max((1, 2), key=lambda c: res.contender(c).estimate.point))
            assert res.tied == (1,), res.message
            assert "#1 ties with it within 1%" in res.message
        assert named == {2}  # the preferred one, every time
        assert leaders == {1, 2}  # while the larger point estimate flipped between repeats

    def test_a_finalist_that_clears_a_look_later_still_ties(self) -> None:
        """With 25 % noise between processes one of two tied finalists often clears the default
        a look before the other: the study measures the possible tie on (beside the leader)
        instead of stopping at the first winner, so the same route is named every time (a
        real-study run had named whichever cleared first)."""
        for seed in range(20):
            res = revalidate_sequential(
                [1, 2], 0, processes(self.TIE, 0.25, seed), SequentialPlan(max_rounds=12),
                seed=seed, prefer=lambda n: {1: (1,), 2: (0,)}[n])
            assert (res.winner, res.tied) == (2, (1,)), res.message

    def test_without_an_order_the_lower_number_is_named(self) -> None:
        for seed in range(6):
            res = revalidate_sequential([2, 1], 0, processes(self.TIE, 0.05, seed), SequentialPlan(),
                                        seed=seed)
            assert (res.winner, res.tied) == (1, (2,))

    def test_a_clearly_faster_finalist_is_named_for_its_speed(self) -> None:
        """#1 is 2x the default, #2 1.25x: #1 is named although the order prefers #2."""
        for seed in range(6):
            res = revalidate_sequential(
                [1, 2], 0, processes({0: 1.0, 1: 0.5, 2: 0.8}, 0.03, seed),
                SequentialPlan(stop_at_winner=False), seed=seed,
                prefer=lambda n: {1: (1,), 2: (0,)}[n])
            assert (res.winner, res.tied) == (1, ())

    def test_the_tie_survives_the_store(self) -> None:
        res = revalidate_sequential([1, 2], 0, processes(self.TIE, 0.05, 3), SequentialPlan(), seed=3)
        assert SequentialResult.from_json(json.loads(json.dumps(res.to_json()))).tied == res.tied


def test_a_very_high_confidence_after_two_rounds_gives_no_bound_not_an_overflow():
    """``gate --confidence 0.9999 --max-rounds 2`` raised OverflowError (math.exp of a log bound
    near 900) through the CLI: the estimate now has no finite interval, and says so."""
    from gptuner_core.measurement import SequentialPlan
    from gptuner_core.measurement import revalidate_sequential

    noisy = {0: [1.0, 3.0], 1: [2.9, 1.1]}
    res = revalidate_sequential(
        [1], 0, lambda n, r: [noisy[n][r]] * 5,
        SequentialPlan(min_effect=0.01, confidence=0.9999, min_rounds=2, max_rounds=2, winner_floor=0.0),
    )
    est = res.contenders[0].estimate
    assert res.verdict.value == "inconclusive"
    assert est.low is None and est.high is None and "no finite interval" in est.note
