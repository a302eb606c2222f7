"""Knob effects, importance, interactions and triage on a real tuned study."""

from __future__ import annotations

import pytest

from gptuner_core.errors import StoreError
from gptuner_core.explain import explain
from gptuner_core.explain import read_study
from gptuner_core.records import CandidateState

from .conftest import EXPR


pytestmark = pytest.mark.slow


def _by_route(study):  # noqa: ANN001, ANN202
    return {r.requested_route: r for r in read_study(study).records}


class TestEffects:
    def test_failures_count_in_the_effect_of_a_value(self, cnn_study):
        """int4 weights: every candidate that really ran them failed (accuracy gate)."""
        e = explain(cnn_study, 2)
        int4 = next(x for x in e.all_effects if (x.knob, x.value) == ("-quant:weight_type", "int4"))
        assert int4.n == 1 and int4.n_failed == 1 and int4.failure_rate == 1.0
        assert int4.failure_ci[0] > 0 and int4.failure_ci[1] == 1.0
        assert int4.speedup is None, "no eligible int4 candidate: no latency effect claimed"

    def test_int8_effect_has_a_ci_from_the_measurements(self, cnn_study):
        e = explain(cnn_study, 2)
        qdq = next(x for x in e.all_effects if (x.knob, x.value) == ("-quant:mode", "qdq"))
        assert qdq.n == 2 and qdq.n_failed == 1 and qdq.n_eligible == 1
        low, high = qdq.speedup_ci
        assert low < qdq.speedup < high, "one candidate per group still gets an interval"
        assert e.effects == (qdq,), "the candidate's own changed value"
        assert e.changed == (("-quant:mode", "off", "qdq"),)

    def test_triage_explains_the_int4_failure_and_excludes_it(self, cnn_study):
        """The accuracy failure is clustered, explained by int4 and excluded by an expression."""
        from gptuner_core.expressions import Expression
        from gptuner_core.knobs import KnobDatabase
        from gptuner_core.storage import open_store

        e = explain(cnn_study, 2)
        (cluster,) = e.failures
        assert cluster.signature.startswith("ACCURACY_FAILED: output '…' cos loss N >= epsilon N")
        assert cluster.explanation == "every route with -quant:weight_type=int4 fails"
        assert cluster.exclude_expression == "-quant:mode=[off|qdq] -quant:weight_type=[int8]"
        with open_store(cnn_study, readonly=True) as store:
            db = KnobDatabase.from_json(store.get_meta("knob_db"))
        expr = Expression.parse(cluster.exclude_expression, db)
        assert expr.count("full") == 2 and str(Expression.parse(EXPR, db)) != str(expr)

    def test_interaction_reports_a_pair_that_fails_only_together(self, cnn_study):
        e = explain(cnn_study, 2)
        (pair,) = e.interactions
        assert (pair.knob_a, pair.value_a, pair.knob_b, pair.value_b) == (
            "-quant:mode", "qdq", "-quant:weight_type", "int4")
        assert pair.pair_failure_rate == 1.0 and pair.singles_failure_rate == 0.0

    def test_layer_diff_against_the_default_names_quantized_convs(self, cnn_study):
        """Each Conv of the default (#0) is lined up with the QLinearConv #2 runs for it, INT8,
        and the kernel change is named. Which groups are beyond their own noise (the sources) is
        the machine's timing, not the diff's: under two CPU hogs one Conv's profile noise reached
        8 ms and a MaxPool led, so the sources are held to their definition, whatever they are."""
        e = explain(cnn_study, 2)
        diff = e.layer_diff
        assert diff is not None
        convs = [r for r in diff.rows if r.op == "Conv"]
        assert len(convs) == 4, [r.group for r in diff.rows]  # c1..c4, each fused with its Relu
        for r in convs:
            assert r.a_kinds == ("Conv",) and r.a_precision == "FP32", r
            assert "QLinearConv" in r.b_kinds and "INT8" in r.b_precision.split("/"), r
            assert any(c.startswith("kernel Conv -> ") and "QLinearConv" in c for c in r.changes), r.changes
        sign = 1.0 if diff.delta_ms >= 0 else -1.0
        assert diff.sources() == tuple(r for r in diff.rows if r.significant and r.delta_ms * sign > 0)

    def test_states_of_the_study(self, cnn_study):
        recs = _by_route(cnn_study)
        assert recs["-quant:mode=qdq -quant:weight_type=int4"].state is CandidateState.ACCURACY_FAILED
        assert recs["-quant:mode=off -quant:weight_type=int4"].state is CandidateState.DUPLICATE


class TestErrors:
    def test_unknown_candidate(self, cnn_study):
        with pytest.raises(StoreError, match=r"candidate #99 is not in this study \(candidates: 0..3\)"):
            explain(cnn_study, 99)

    def test_not_a_study(self, tmp_path):
        with pytest.raises(StoreError, match="is not a study folder"):
            explain(tmp_path)
