"""The pure verdict functions: the gate, the speed-up and the Winner record."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gptuner_core.accuracy import AccuracySettings
from gptuner_core.engine.decide import verdict
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.records import Verdict
from gptuner_core.records import Winner


def _lat(ms: float) -> LatencyStats:
    return LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms,
                        cv=0.0, ci_low_ms=ms, ci_high_ms=ms, n_samples=1)


def _rec(n: int, ms: float | None, samples=(), state=CandidateState.COMPLETE, **kw) -> CandidateRecord:
    return CandidateRecord(number=n, requested_route=f"-k={n}", state=state,
                           latency=_lat(ms) if ms else None, samples_ms=tuple(samples), **kw)


class TestGate:
    def test_within_epsilon_passes(self):
        """Losses below epsilon: COMPLETE, losses recorded."""
        out = {"y": np.array([1.0, 2.0])}
        res = verdict.gate(out, {"y": np.array([1.0, 2.001])}, AccuracySettings(metric="lInf", epsilon=0.01), None)
        assert res.state is CandidateState.COMPLETE and res.accuracy.losses["y"] == pytest.approx(0.001)

    def test_over_epsilon_fails_with_the_reason(self):
        res = verdict.gate({"y": np.array([1.0])}, {"y": np.array([2.0])},
                           AccuracySettings(metric="lInf", epsilon=0.5), None)
        assert res.state is CandidateState.ACCURACY_FAILED
        assert res.error == "output 'y' lInf loss 1 >= epsilon 0.5"

    def test_task_metric_from_the_child_is_gated(self):
        settings = AccuracySettings(metric="l2", task_metric="top1", max_task_drop=0.01)
        same = {"y": np.zeros(3)}
        ok = verdict.gate(same, same, settings, 0.9, task_value=0.895)
        bad = verdict.gate(same, same, settings, 0.9, task_value=0.8)
        assert ok.state is CandidateState.COMPLETE and bad.state is CandidateState.ACCURACY_FAILED
        assert "dropped" in bad.error

    def test_task_metric_error_is_an_accuracy_failure(self):
        same = {"y": np.zeros(3)}
        res = verdict.gate(same, same, AccuracySettings(task_metric="m.py:f"), None,
                           task_error="task metric 'm.py:f' raised RuntimeError('x')")
        assert res.state is CandidateState.ACCURACY_FAILED and "raised" in res.error

    def test_shape_mismatch_is_structural(self):
        res = verdict.gate({"y": np.zeros(3)}, {"y": np.zeros(4)}, AccuracySettings(), None)
        assert res.state is CandidateState.ACCURACY_FAILED and "shape" in res.error


class TestSpeedup:
    def test_default_is_one(self):
        d = _rec(0, 1.0, samples=[1.0, 1.1])
        assert verdict.with_speedup(d, None).speedup_ci == (1.0, 1.0)

    def test_bootstrap_ci_with_enough_samples(self):
        d = _rec(0, 1.0, samples=np.linspace(0.9, 1.1, 30))
        c = _rec(1, 0.5, samples=np.linspace(0.45, 0.55, 30))
        got = verdict.with_speedup(c, d)
        assert got.speedup == pytest.approx(2.0, rel=0.01) and got.speedup_ci[0] < 2.0 < got.speedup_ci[1]

    @pytest.mark.parametrize("n", [0, 1])
    def test_fewer_than_two_samples_is_a_point_without_ci(self, n):
        """Statistics are defined for n < 2: no CI, a note, never an exception."""
        d = _rec(0, 1.0, samples=[1.0, 1.0, 1.1])
        c = _rec(1, 0.5, samples=[0.5] * n)
        got = verdict.with_speedup(c, d)
        assert got.speedup == pytest.approx(2.0) and got.speedup_ci is None
        assert "no confidence interval" in got.extra["speedup_note"]


class TestWinner:
    def test_contenders_are_eligible_non_default_fastest_first(self):
        hist = [_rec(0, 1.0), _rec(1, 0.8), _rec(2, 0.5), _rec(3, 0.3, state=CandidateState.ACCURACY_FAILED),
                _rec(4, 0.4, state=CandidateState.DUPLICATE)]
        assert [r.number for r in verdict.contenders(hist)] == [2, 1]

    def test_screening_only_never_recommends_a_slower_route(self):
        """--revalidate-top-k 0 once declared '#1 best route (0.726x)' the winner."""
        slow = _rec(1, 1.4, speedup=0.726, speedup_ci=(0.70, 0.75))
        w = verdict.screening_only(slow, 0.01)
        assert w.number == 0 and w.verdict is Verdict.NOT_REVALIDATED and w.screening
        fast = _rec(2, 0.5, speedup=2.0, speedup_ci=(1.9, 2.1))
        w = verdict.screening_only(fast, 0.01)
        assert w.number == 2 and w.speedup == 2.0 and "screening numbers only" in w.message

    def test_winner_round_trips(self):
        w = Winner(verdict=Verdict.INCONCLUSIVE, number=0, speedup=1.0, ci=None, message="m",
                   best=3, best_speedup=1.2, best_ci=(0.9, 1.5), rounds=12, method="t",
                   projected_rounds=30)
        assert Winner.from_json(w.to_json()) == w

    def test_old_winner_meta_reads_as_a_verdict(self):
        """Studies stored before the verdict field existed still render."""
        assert Winner.from_json({"number": 2, "speedup": 1.4, "ci": [1.2, 1.6], "significant": True,
                                 "message": "x"}).verdict is Verdict.WINNER
        assert Winner.from_json({"number": 0, "significant": False}).verdict is Verdict.NOT_FASTER


class TestOneVerdictEverywhere:
    """The Overview once showed '1.000x [0.655, 6.309] (#0)': the default's 1.0x beside another
    route's CI. Every surface now shows Winner.headline()."""

    def test_not_faster_never_pairs_the_default_with_another_routes_ci(self):
        from gptuner_core import views

        win = Winner(verdict=Verdict.INCONCLUSIVE, number=0, speedup=1.0, ci=None, message="m",
                     best=116, best_speedup=1.385, best_ci=(0.814, 2.358), rounds=5, projected_rounds=40)
        line = win.headline()
        assert line == "no winner: keeping the default (undecided after 5 rounds)"
        assert "About 35 more rounds (40 in all)" in win.sentence() and "#116 measured 1.385x" in win.sentence()
        s = views.study_summary("s", config={}, meta={"winner": win.to_json()}, n_finished=3)
        assert views.studies_frame([s]).iloc[0]["verdict"] == line

    def test_cli_show_prints_the_headline(self, tmp_path, capsys):
        from gptuner_core.cli.show import print_ranking
        from gptuner_core.storage import open_store

        win = Winner(verdict=Verdict.WINNER, number=2, speedup=1.4, ci=(1.2, 1.6), message="m", rounds=6)
        with open_store(tmp_path) as store:
            store.init_study({"model": "m"}, {})
            store.set_winner(win)
        print_ranking(tmp_path)
        assert "verdict: winner: route #2, 1.400x faster [1.200, 1.600], after 6 rounds" in capsys.readouterr().out


class TestTooBusyToDecide:
    """Issue 41 item 4: an undecided verdict on a busy machine says so, and what to do, before the
    round count (a busy 2-core machine gave "about 1505 more rounds ... would decide")."""

    def _history(self, busy: int, of: int):
        return [_rec(i, 1.0, telemetry={"busy": i < busy}) for i in range(of)]

    def _undecided(self) -> Winner:
        return Winner(verdict=Verdict.INCONCLUSIVE, number=0, speedup=1.0, ci=None, message="m",
                      best=2, best_speedup=1.82, best_ci=(0.35, 9.43), rounds=12, projected_rounds=1517)

    def test_a_busy_machine_is_named_before_the_round_count(self):
        w = verdict.too_busy(self._undecided(), self._history(busy=3, of=4))
        assert w.busy_share == 0.75
        assert w.headline() == (
            "no winner: keeping the default (the machine was too busy to decide (other programs "
            "ran during 75% of the measurements): close them and run it again; undecided after 12 rounds)")
        # the sentence beside the headline does not say it twice, and gives no round count as
        # advice (the Results banner read "...too busy... close them and run it again; undecided
        # after 12 rounds) — The machine was too busy... About 397 more rounds... would decide")
        sentence = w.sentence()
        assert "too busy" not in sentence and not re.search(r"\d+ more rounds", sentence), sentence
        assert sentence.endswith("Other programs ran during 75% of the measurements: close them and "
                                 "run the study again; more rounds on a machine this busy would not settle it."), sentence
        assert Winner.from_json(w.to_json()) == w

    def test_a_quiet_machine_or_a_decided_verdict_is_left_alone(self):
        assert verdict.too_busy(self._undecided(), self._history(busy=0, of=5)).busy_share is None
        won = Winner(verdict=Verdict.WINNER, number=1, speedup=2.0, ci=(1.5, 2.5), message="m", rounds=4)
        assert verdict.too_busy(won, self._history(busy=5, of=5)) == won
        assert "busy" not in self._undecided().headline()
