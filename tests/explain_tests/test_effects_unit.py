"""Effect, importance, interaction and triage arithmetic on hand-made records (fast)."""

from __future__ import annotations

import itertools
import math

from gptuner_core.explain import exclusion_expression
from gptuner_core.explain import importance
from gptuner_core.explain import interactions
from gptuner_core.explain import main_effects
from gptuner_core.explain import triage
from gptuner_core.explain.effects import wilson
from gptuner_core.explain.triage import signature
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats


DEFAULTS = {"-a": "0", "-b": "0", "-c": "x"}


def _rec(number: int, route: str, ms: float | None, state: CandidateState = CandidateState.COMPLETE,
         error: str | None = None, rel_ci: float = 0.02) -> CandidateRecord:
    lat = None
    if ms is not None:
        lat = LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms, cv=0.01,
                           ci_low_ms=ms * (1 - rel_ci), ci_high_ms=ms * (1 + rel_ci), n_samples=50)
    return CandidateRecord(number=number, requested_route=route, effective_route=route if ms else None,
                           state=state, latency=lat, error=error)


def _grid() -> list[CandidateRecord]:
    """-a=1 halves latency, -b=1 adds 10 %, -c has no effect; -a=1 -b=1 -c=y crashes."""
    out = []
    for i, (a, b, c) in enumerate(itertools.product("01", "01", "xy")):
        route = f"-a={a} -b={b} -c={c}"
        if (a, b, c) == ("1", "1", "y"):
            out.append(_rec(i, route, None, CandidateState.CRASHED, "child killed by signal 11 (SIGSEGV) at 0x7f3a"))
            continue
        ms = 10.0 * (0.5 if a == "1" else 1.0) * (1.1 if b == "1" else 1.0) * (1.0 + 0.01 * (i % 3))
        out.append(_rec(i, route, ms))
    return out


class TestMainEffects:
    def test_speedup_and_failures_of_each_value(self):
        effects = {(e.knob, e.value): e for e in main_effects(_grid(), DEFAULTS)}
        a1 = effects[("-a", "1")]
        assert a1.n == 4 and a1.n_failed == 1 and a1.n_eligible == 3
        assert 1.8 < a1.speedup < 2.2 and a1.significant
        c = effects[("-c", "y")]
        assert c.speedup_ci[0] < 1.0 < c.speedup_ci[1] and not c.significant

    def test_measurement_ci_widens_a_single_candidate_effect(self):
        narrow = main_effects([_rec(0, "-a=0", 10.0), _rec(1, "-a=1", 8.0)], DEFAULTS)[0]
        wide = main_effects([_rec(0, "-a=0", 10.0, rel_ci=0.3), _rec(1, "-a=1", 8.0, rel_ci=0.3)], DEFAULTS)[0]
        assert narrow.significant and not wide.significant
        assert math.isclose(narrow.speedup, 1.25) and math.isclose(wide.speedup, 1.25)

    def test_effect_is_paired_with_the_route_that_differs_only_in_that_knob(self):
        """-a=1 halves latency; the only -a=1 route also sets -b=1 (which doubles it). The marginal
        contrast (1.41x) is biased by -b; pairing with the -b=1 route gives the true 2x."""
        recs = [_rec(0, "-a=0 -b=0", 10.0), _rec(1, "-a=0 -b=1", 20.0), _rec(2, "-a=1 -b=1", 10.0)]
        a1 = next(e for e in main_effects(recs, DEFAULTS) if e.knob == "-a")
        assert a1.method == "paired" and math.isclose(a1.speedup, 2.0)
        assert a1.default_n == 1, "compared with its partner only"
        lone = [_rec(0, "-a=0 -b=0", 10.0), _rec(1, "-a=0 -b=1", 20.0), _rec(2, "-a=1 -b=2", 10.0)]
        a1 = next(e for e in main_effects(lone, DEFAULTS) if e.knob == "-a")
        assert a1.method == "marginal" and math.isclose(a1.speedup, math.sqrt(2.0))

    def test_wilson_interval(self):
        lo, hi = wilson(0, 10)
        assert lo == 0.0 and 0.25 < hi < 0.35
        assert wilson(0, 0) == (0.0, 1.0)


class TestImportance:
    def test_the_knob_that_matters_ranks_first_with_a_bootstrap_ci(self):
        ranked = importance(_grid(), DEFAULTS, resamples=100)
        assert [r.knob for r in ranked][0] == "-a"
        top = ranked[0]
        assert top.importance > 0.8 and top.ci[0] <= top.importance <= top.ci[1]
        assert ranked[-1].importance < 0.05
        assert abs(sum(r.importance for r in ranked) - 1.0) < 1e-9

    def test_too_few_candidates(self):
        assert importance([_rec(0, "-a=0", 1.0), _rec(1, "-a=1", 2.0)], DEFAULTS) == []


class TestInteractions:
    def test_additive_pair_has_ratio_one(self):
        pairs = {(i.knob_a, i.value_a, i.knob_b, i.value_b): i for i in interactions(_grid(), DEFAULTS)}
        ab = pairs[("-a", "1", "-b", "1")]
        assert ab.ratio is not None and abs(ab.ratio - 1.0) < 0.05


class TestTriage:
    def test_signature_masks_run_specific_parts(self):
        r1 = _rec(1, "", None, CandidateState.CRASHED, "child killed by signal 11 (SIGSEGV) at 0x7f3a")
        r2 = _rec(2, "", None, CandidateState.CRASHED, "child killed by signal 11 (SIGSEGV) at 0x11ff")
        assert signature(r1) == signature(r2) == "CRASHED: child killed by signal N (SIGSEGV) at <hex>"

    def test_cluster_cause_needs_every_route_with_the_value_to_fail(self):
        recs = _grid()
        (cluster,) = triage(recs, DEFAULTS, "-a=[0|1] -b=[0|1] -c=[x|y]")
        assert cluster.numbers == (7,)
        assert all(not c.always_fails for c in cluster.causes)
        assert cluster.exclude_expression is None
        assert "not every such route fails" in cluster.explanation

    def test_always_failing_value_gets_an_exclusion(self):
        recs = [_rec(0, "-a=0", 1.0), _rec(1, "-a=1", None, CandidateState.BUILD_FAILED, "bad value 7"),
                _rec(2, "-a=2", 1.0)]
        (cluster,) = triage(recs, DEFAULTS, "-a=[0|1|2] -c=x")
        assert cluster.explanation == "every route with -a=1 fails"
        assert cluster.exclude_expression == "-a=[0|2] -c=x"

    def test_exclusion_never_empties_a_knob_or_touches_fixed_terms(self):
        assert exclusion_expression("-a=[1] -b=2", [("-a", "1")]) is None
        assert exclusion_expression("-a=1 -b=[1|2]", [("-a", "1")]) is None
        assert exclusion_expression("-a=[1|2] -b=[1|2]", [("-b", "2")]) == "-a=[1|2] -b=[1]"
