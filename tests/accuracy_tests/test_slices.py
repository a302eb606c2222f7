"""Issue 27: slices of packed outputs, scale dominance, non-finite metrics (pure, no processes)."""

from __future__ import annotations

import math
import re
import textwrap

import numpy as np
import pytest

from gptuner_core.accuracy import AccuracySettings
from gptuner_core.accuracy import check
from gptuner_core.accuracy import evaluate
from gptuner_core.accuracy import task_metric_value
from gptuner_core.accuracy.slices import OutputSlice
from gptuner_core.accuracy.slices import dominance_warnings
from gptuner_core.accuracy.slices import split_selectors
from gptuner_core.errors import ConfigError
from gptuner_core.records import AccuracyResult


SCORES = "output0[:, 4:, :]"


def packed(seed: int = 0, b: int = 2, classes: int = 3, anchors: int = 20) -> np.ndarray:
    """A ``[b, 4+C, A]`` head: pixel boxes (0..320) then scores (0..1)."""
    rng = np.random.default_rng(seed)
    boxes = rng.uniform(20, 300, size=(b, 4, anchors))
    scores = rng.uniform(0, 1, size=(b, classes, anchors))
    return np.concatenate([boxes, scores], axis=1).astype(np.float32)


class TestParse:
    @pytest.mark.parametrize(("text", "canonical"), [
        ("output0[:, 4:, :]", "output0[:, 4:, :]"),
        ("output0[:,4:,:]", "output0[:, 4:, :]"),
        (" output0 [ : , 4 : , : ] ", "output0[:, 4:, :]"),
        ("logits[..., -1]", "logits[..., -1]"),
        ("y[0, 1:8:2]", "y[0, 1:8:2]"),
        ("y[::-1]", "y[::-1]"),
        ("y", "y"),
    ])
    def test_numpy_syntax_parses_to_one_canonical_spelling(self, text: str, canonical: str) -> None:
        assert OutputSlice.parse(text).text == canonical

    @pytest.mark.parametrize("text", [
        "output0[__import__('os').getpid()]", "output0[:, 4:", "output0[1.5]", "output0[None]",
        "output0[:, 4:][0]", "output0[]", "output0[..., ...]", "[0]", "output0[::0]", "output0[a:b]",
    ])
    def test_anything_else_is_refused_without_evaluating_it(self, text: str) -> None:
        with pytest.raises(ConfigError, match="slice"):
            OutputSlice.parse(text)

    def test_selects_like_numpy(self) -> None:
        a = packed()
        assert np.array_equal(OutputSlice.parse(SCORES).select(a), a[:, 4:, :])
        assert np.array_equal(OutputSlice.parse("output0[..., 0]").select(a), a[..., 0])
        assert np.array_equal(OutputSlice.parse("output0[1, ::-2]").select(a), a[1, ::-2])

    def test_split_keeps_the_commas_inside_brackets(self) -> None:
        assert split_selectors(f"boxes,{SCORES},emb") == ["boxes", SCORES, "emb"]
        assert split_selectors("") == []


class TestValidation:
    SHAPES = {"output0": ("batch", 7, 20), "emb": (None, 16)}

    @pytest.mark.parametrize(("settings", "message"), [
        ({"outputs": ("output0[:, 4:, :, 0]",)}, "has 4 indices, output 'output0' has 3 dimensions"),
        ({"outputs": ("output0[:, 7:, :]",)}, "selects nothing of dimension 1 (size 7)"),
        ({"outputs": ("output0[:, 9]",)}, "index 9 is out of range for dimension 1 (size 7)"),
        ({"output_epsilons": {"nope[:, 1]": 0.1}}, "are not model outputs"),
        ({"task_output": "emb[:, 16:]"}, "selects nothing of dimension 1 (size 16)"),
    ])
    def test_a_slice_that_cannot_fit_the_model_is_refused(self, settings: dict, message: str) -> None:
        s = AccuracySettings(metric="cos", epsilon=0.01, **settings)
        with pytest.raises(ConfigError, match=re.escape(message)):
            s.check_outputs(self.SHAPES)

    def test_a_fitting_slice_and_dynamic_dims_pass(self) -> None:
        s = AccuracySettings(metric="cos", epsilon=0.01, outputs=(SCORES, "emb[:, :8]"),
                             output_epsilons={SCORES: 0.02}, task_output="output0")
        s.check_outputs(self.SHAPES)
        s.check_outputs(["output0", "emb"])  # names only: what can be checked is checked
        assert s.epsilon_for(SCORES) == 0.02 and s.gates(SCORES) and not s.gates("output0")

    def test_spellings_are_stored_canonically(self) -> None:
        s = AccuracySettings(metric="cos", outputs=("output0[:,4:,:]",), output_epsilons={"output0[:,4:,:]": 0.1})
        assert s.outputs == (SCORES,) and s.output_epsilons == ((SCORES, 0.1),)
        assert AccuracySettings.from_json(s.to_json()) == s


class TestSliceLosses:
    def test_the_whole_output_passes_while_its_score_slice_fails(self) -> None:
        golden = {"output0": packed()}
        moved = golden["output0"].copy()
        moved[:, 4:, :] = np.random.default_rng(5).uniform(0, 1, size=moved[:, 4:, :].shape)
        whole = AccuracySettings(metric="cos", epsilon=0.01)
        result, passed, _ = evaluate({"output0": moved}, golden, None, whole, None)
        assert passed and result.losses["output0"] < 0.01
        sliced = AccuracySettings(metric="cos", outputs=(SCORES,), output_epsilons={SCORES: 0.01})
        result, passed, reason = evaluate({"output0": moved}, golden, None, sliced, None)
        assert not passed
        assert set(result.losses) == {"output0", SCORES}  # the whole output is still recorded
        assert result.losses[SCORES] > 0.05
        assert f"output '{SCORES}' cos loss" in reason and "'output0' cos" not in reason

    def test_a_slice_that_does_not_fit_the_outputs_is_a_structural_failure(self) -> None:
        s = AccuracySettings(metric="cos", epsilon=0.01, outputs=("output0[:, :, 30:]",))
        result, passed, reason = evaluate({"output0": packed()}, {"output0": packed()}, None, s, None)
        assert not passed and math.isinf(result.losses["output0[:, :, 30:]"])
        assert "selects nothing of dimension 2 (size 20)" in reason


class TestDominance:
    def test_a_gate_on_a_packed_output_names_the_slice_that_dominates_its_norm(self) -> None:
        warnings = dominance_warnings({"output0": packed()}, AccuracySettings(metric="cos", epsilon=0.01))
        assert len(warnings) == 1, warnings
        assert "output0[:, 0:4, :]" in warnings[0] and "output0[:, 4:, :]" in warnings[0]
        assert "%" in warnings[0]

    def test_no_warning_for_balanced_outputs_or_a_gated_slice(self) -> None:
        rng = np.random.default_rng(0)
        balanced = {"output0": rng.normal(size=(2, 7, 20)), "logits": rng.normal(size=(4, 10))}
        assert dominance_warnings(balanced, AccuracySettings(metric="cos", epsilon=0.01)) == []
        gated = AccuracySettings(metric="cos", outputs=(SCORES,), output_epsilons={SCORES: 0.01})
        assert dominance_warnings({"output0": packed()}, gated) == []


class TestNonFinite:
    """A metric that returns inf or NaN fails the candidate with the reason (before: +inf passed)."""

    @pytest.mark.parametrize("value", ["float('inf')", "float('-inf')", "float('nan')"])
    def test_a_user_metric_returning_non_finite_is_refused(self, tmp_path, value: str) -> None:
        path = tmp_path / "m.py"
        path.write_text(textwrap.dedent(f"""
            def metric(outputs, labels):
                return {value}
        """))
        with pytest.raises(ConfigError, match=r"returned -?(inf|nan) \(expected a finite number\)"):
            task_metric_value(f"{path}:metric", {"y": np.zeros(3)}, None)

    @pytest.mark.parametrize(("value", "reference"), [
        (math.inf, 0.9), (-math.inf, 0.9), (math.nan, 0.9), (0.9, math.inf), (0.9, math.nan), (0.9, -math.inf),
    ])
    def test_stored_non_finite_task_values_fail_the_gate(self, value: float, reference: float) -> None:
        s = AccuracySettings(metric="l2", task_metric="m.py:f", max_task_drop=0.05)
        acc = AccuracyResult(metric="l2", losses={"y": 0.0}, task_metric=value, task_metric_name="m.py:f")
        passed, reason = check(acc, s, reference)
        assert not passed and "not a finite number" in reason

    def test_a_non_number_loss_fails(self) -> None:
        acc = AccuracyResult(metric="l2", losses={"y": "0.0"}, task_metric=None)  # type: ignore[dict-item]
        passed, reason = check(acc, AccuracySettings(metric="l2", epsilon=0.1), None)
        assert not passed and "output 'y'" in reason

    def test_the_engine_verdict_fails_a_non_finite_task_value(self) -> None:
        """The one verdict a study and ``gptuner gate`` (bundle gate) apply to a candidate."""
        from gptuner_core.engine.decide import verdict
        from gptuner_core.records import CandidateState

        same = {"y": np.ones(3)}
        s = AccuracySettings(metric="l2", epsilon=0.1, task_metric="m.py:f", max_task_drop=0.05)
        res = verdict.gate(same, same, s, 0.9, task_value=math.inf)
        assert res.state is CandidateState.ACCURACY_FAILED and "not a finite number (inf)" in res.error
