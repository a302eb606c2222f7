"""Accuracy gate: trtexec loss semantics, task metrics, the ε gate and re-ranking."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gptuner_core.accuracy import DISPLAY_NAMES
from gptuner_core.accuracy import METRICS
from gptuner_core.accuracy import AccuracySettings
from gptuner_core.accuracy import check
from gptuner_core.accuracy import compare
from gptuner_core.accuracy import compare_outputs
from gptuner_core.accuracy import display_name
from gptuner_core.accuracy import evaluate
from gptuner_core.accuracy import load_task_metric
from gptuner_core.accuracy import metric_from_display
from gptuner_core.accuracy import normalize_metric
from gptuner_core.accuracy import output_losses
from gptuner_core.accuracy import rerank
from gptuner_core.accuracy import task_metric_value
from gptuner_core.accuracy import top1
from gptuner_core.errors import ConfigError
from gptuner_core.errors import DatasetError
from gptuner_core.errors import GptunerError
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats


A = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
R = np.array([1.0, 2.5, 3.0, 3.0], dtype=np.float32)


def _loss(metric: str, a=A, r=R, **kw) -> float:
    return output_losses({"y": a}, {"y": r}, metric, **kw)["y"]


class TestLosses:
    """Each metric on hand-computed values."""

    def test_known_values(self) -> None:
        """diff = [0, -0.5, 0, 1]: l1 0.375, l2 0.3125, lInf 1, l0 0.5, cos from the formula."""
        assert _loss("l1") == 0.375
        assert _loss("l2") == 0.3125
        assert _loss("lInf") == 1.0
        assert _loss("l0") == 0.5
        assert _loss("cos") == pytest.approx(1 - 27 / math.sqrt(30 * 25.25), rel=1e-12)

    def test_l0_strict_threshold_and_rtol(self) -> None:
        """l0 counts |a-r| > atol + rtol*|r| (strictly greater)."""
        r = np.array([0.0, 0.0, 10.0, 10.0])
        a = np.array([0.5, 0.75, 11.0, 11.5])
        # tolerances: 0.5, 0.5, 0.5 + 0.1*10 = 1.5, 1.5 -> only 0.75 exceeds
        assert _loss("l0", a, r, atol=0.5, rtol=0.1) == 0.25
        assert _loss("l0", a, r, atol=0.5, rtol=0.0) == 0.75
        assert _loss("l0", a, r) == 1.0  # defaults 1e-5

    def test_atol_rtol_only_affect_l0(self) -> None:
        """The other metrics ignore atol/rtol."""
        for metric in ("l1", "l2", "lInf", "cos"):
            assert _loss(metric, atol=10.0, rtol=10.0) == _loss(metric)

    def test_identical_outputs_are_zero(self) -> None:
        """All metrics are 0 for a perfect match, including int and bool outputs."""
        for metric in METRICS:
            assert _loss(metric, A, A.copy()) == 0.0
            assert _loss(metric, np.arange(6), np.arange(6)) == 0.0
            assert _loss(metric, np.array([True, False]), np.array([True, False])) == 0.0

    def test_cosine_cases(self) -> None:
        """Opposite 2, orthogonal 1, both zero 0, one zero 1, scale-invariant, no overflow."""
        x = np.array([1.0, 0.0])
        assert _loss("cos", x, -x) == 2.0
        assert _loss("cos", x, np.array([0.0, 1.0])) == 1.0
        assert _loss("cos", np.zeros(3), np.zeros(3)) == 0.0
        assert _loss("cos", np.zeros(2), x) == 1.0
        assert _loss("cos", A * 1000, R) == pytest.approx(_loss("cos"), abs=1e-12)
        big = np.array([1e200, 2e200])
        assert _loss("cos", big, big) == pytest.approx(0.0, abs=1e-15)

    def test_computed_in_float64(self) -> None:
        """float32 inputs whose squared error overflows float32 still give a finite l2."""
        a = np.array([1e20], dtype=np.float32)
        r = np.array([0.0], dtype=np.float32)
        assert _loss("l2", a, r) == pytest.approx(float(np.float32(1e20)) ** 2)
        h = np.array([1.0, 2.0], dtype=np.float16)
        assert _loss("l1", h, h + np.float16(0.5)) == 0.5

    def test_empty_tensor(self) -> None:
        """A zero-size output with the reference's shape matches."""
        assert _loss("l2", np.zeros((0, 3)), np.zeros((0, 3))) == 0.0

    def test_metrics_not_comparable(self) -> None:
        """The Cookbook's point: one mismatch, five metrics, at ε = 1e-3 only l2 passes.

        Like the Cookbook's MNIST capture (L0=1.0, L1=0.001432, L2=0.000003, LInf=0.003492,
        Cos=0.001497): small outputs, every element off by about 1e-3.
        """
        rng = np.random.default_rng(0)
        ref = rng.normal(0.0, 0.03, size=1000)
        err = rng.choice([-1, 1], size=1000) * rng.uniform(0.0005, 0.0035, size=1000)
        out = ref + err
        losses = {m: _loss(m, out, ref) for m in METRICS}
        assert losses["l0"] == 1.0
        assert 1e-3 < losses["l1"] < 3e-3
        assert losses["l2"] < 1e-5
        assert 3e-3 < losses["lInf"] <= 3.5e-3
        assert 1e-3 < losses["cos"] < 1e-2
        passing = []
        for metric in METRICS:
            settings = AccuracySettings(metric=metric, epsilon=1e-3)
            _, passed, _ = evaluate({"y": out}, {"y": ref}, None, settings, None)
            if passed:
                passing.append(metric)
        assert passing == ["l2"]


class TestUncomparable:
    """Outputs that cannot be compared get loss inf and a reason."""

    def test_shape_mismatch(self) -> None:
        """Shapes must match exactly; the reason names both."""
        c = compare_outputs({"y": np.zeros((1, 10))}, {"y": np.zeros((1, 12))}, "l2")["y"]
        assert c.loss == math.inf
        assert c.reason == "output 'y' has shape (1, 10), reference has shape (1, 12)"

    def test_missing_output(self) -> None:
        """A golden output the candidate lacks is inf; extra candidate outputs are ignored."""
        result = compare_outputs({"z": A, "extra": A}, {"y": R, "z": R}, "l1")
        assert set(result) == {"y", "z"}
        assert result["y"].loss == math.inf
        assert result["y"].reason == "output 'y' missing (candidate outputs: ['extra', 'z'])"
        assert result["z"].loss == 0.375

    def test_non_finite_output(self) -> None:
        """NaN, or inf where the reference is finite, make the loss inf for every metric."""
        for bad in (np.nan, np.inf, -np.inf):
            a = A.astype(np.float64)
            a[1] = bad
            for metric in METRICS:
                c = compare(a, R, metric, name="y")
                assert c.loss == math.inf
                assert c.reason == "output 'y' has 1 non-finite value(s) (nan/inf)"

    def test_non_finite_reference(self) -> None:
        """A NaN in the reference is reported as the reference's problem."""
        r = R.astype(np.float64)
        r[0] = np.nan
        c = compare(A, r, "l1", name="y")
        assert c.loss == math.inf
        assert "reference of output 'y' has 1 non-finite" in c.reason

    def test_equal_infinities_match(self) -> None:
        """The same infinity at the same position (masked logits) counts as an exact match."""
        a = np.array([-np.inf, 1.0, 2.0, np.inf])
        r = np.array([-np.inf, 1.0, 3.0, np.inf])
        assert _loss("l1", a, r) == 0.25
        assert _loss("lInf", a, r) == 1.0
        assert _loss("l0", a, r) == 0.25
        assert _loss("l1", np.array([np.inf]), np.array([-np.inf])) == math.inf

    def test_non_numeric_dtype(self) -> None:
        """String outputs cannot be compared."""
        c = compare(np.array(["a"]), np.array(["a"]), "l1", name="s")
        assert c.loss == math.inf
        assert "dtype <U1" in c.reason


class TestMetricNames:
    """CLI names, trtexec display names, validation."""

    def test_display_names_both_directions(self) -> None:
        """l0->L0, l1->L1, l2->L2, lInf->LInf, cos->Cosine and back."""
        assert DISPLAY_NAMES == {"l0": "L0", "l1": "L1", "l2": "L2", "lInf": "LInf", "cos": "Cosine"}
        for cli, disp in DISPLAY_NAMES.items():
            assert display_name(cli) == disp
            assert metric_from_display(disp) == cli
            assert display_name(disp) == disp
        assert normalize_metric("linf") == "lInf"
        assert normalize_metric("COSINE") == "cos"

    def test_unknown_metric(self) -> None:
        """Unknown names list the allowed ones."""
        with pytest.raises(ConfigError) as info:
            normalize_metric("l3")
        assert str(info.value) == (
            "unknown accuracy metric 'l3' (allowed: l0, l1, l2, lInf, cos; "
            "or trtexec display names L0, L1, L2, LInf, Cosine)"
        )
        with pytest.raises(ConfigError, match="unknown accuracy metric 'mse'"):
            output_losses({"y": A}, {"y": R}, "mse")


class TestTop1:
    """Top-1 accuracy against labels."""

    def test_known_value(self) -> None:
        """3 of 4 argmaxes match."""
        logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
        assert top1({"logits": logits}, np.array([1, 0, 1, 1])) == 0.75

    def test_named_output_and_one_hot(self) -> None:
        """output_name selects the output; one-hot labels of the output's shape work."""
        outputs = {"aux": np.zeros((2, 3)), "logits": np.array([[0, 5, 1], [9, 0, 0]])}
        assert top1(outputs, np.array([1, 0]), "logits") == 1.0
        assert top1(outputs, np.array([1, 0])) == 0.5  # first output: argmax 0, 0
        assert top1(outputs, np.eye(3)[[1, 0]], "logits") == 1.0
        assert top1(outputs, np.array([1.0, 0.0]), "logits") == 1.0

    def test_errors(self) -> None:
        """No labels, wrong count, non-integer labels, unknown output."""
        outputs = {"logits": np.zeros((4, 3))}
        with pytest.raises(DatasetError, match="needs labels"):
            top1(outputs, None)
        with pytest.raises(DatasetError, match="3 labels for 4 predictions of output 'logits'"):
            top1(outputs, np.array([0, 1, 2]))
        with pytest.raises(DatasetError, match="integer class ids"):
            top1(outputs, np.array([0.5, 1, 2, 0]))
        with pytest.raises(ConfigError, match=r"output 'prob' not found \(outputs: \['logits'\]\)"):
            top1(outputs, np.zeros(4, dtype=int), "prob")


class TestUserTaskMetric:
    """module:function task metrics."""

    @pytest.fixture
    def metric_file(self, tmp_path: Path) -> Path:
        path = tmp_path / "mymetrics.py"
        path.write_text(
            textwrap.dedent(
                """
                import numpy as np
                NOT_A_FUNCTION = 3
                def mean_out(outputs, labels):
                    return float(np.mean(outputs["y"])) + (0 if labels is None else len(labels))
                def broken(outputs, labels):
                    raise ValueError("bad things")
                def wrong_type(outputs, labels):
                    return "high"
                """
            ),
            encoding="utf-8",
        )
        return path

    def test_module_on_path_and_file_path(self, metric_file: Path, monkeypatch) -> None:
        """A module on sys.path and a .py path both resolve and are called as fn(outputs, labels)."""
        monkeypatch.syspath_prepend(str(metric_file.parent))
        outputs = {"y": np.array([1.0, 3.0])}
        assert task_metric_value("mymetrics:mean_out", outputs, None) == 2.0
        assert task_metric_value(f"{metric_file}:mean_out", outputs, np.zeros(3)) == 5.0
        assert load_task_metric("top1") is top1

    @pytest.mark.parametrize("spec", ["foo", "mod:", ":fn", "mod:not-ident", "a.py"])
    def test_bad_spec_format(self, spec: str) -> None:
        """Malformed specs say what the format is."""
        with pytest.raises(ConfigError, match="must be 'top1' or 'module:function'"):
            load_task_metric(spec)

    def test_resolution_errors(self, metric_file: Path, monkeypatch) -> None:
        """Missing module/file/attribute, non-callables, raising and non-numeric functions."""
        monkeypatch.syspath_prepend(str(metric_file.parent))
        with pytest.raises(ConfigError, match="cannot import module 'no_such_module_xyz'"):
            load_task_metric("no_such_module_xyz:f")
        with pytest.raises(ConfigError, match="file 'nope.py' not found"):
            load_task_metric("nope.py:f")
        with pytest.raises(ConfigError, match="module 'mymetrics' has no attribute 'missing'"):
            load_task_metric("mymetrics:missing")
        with pytest.raises(ConfigError, match="'NOT_A_FUNCTION' is a int, not a function"):
            load_task_metric("mymetrics:NOT_A_FUNCTION")
        with pytest.raises(ConfigError, match=r"raised ValueError\('bad things'\)"):
            task_metric_value("mymetrics:broken", {}, None)
        with pytest.raises(ConfigError, match="returned str \\(expected a number\\)"):
            task_metric_value("mymetrics:wrong_type", {}, None)


class TestSettings:
    """AccuracySettings validation."""

    def test_defaults_and_round_trip(self) -> None:
        """Frozen, normalizes the metric, round-trips through JSON."""
        s = AccuracySettings(metric="LInf", epsilon=0.1, task_metric="top1", max_task_drop=0.01)
        assert s.metric == "lInf"
        assert AccuracySettings.from_json(s.to_json()) == s
        with pytest.raises(dataclasses.FrozenInstanceError):
            s.epsilon = 1.0  # type: ignore[misc]

    @pytest.mark.parametrize(
        ("kw", "match"),
        [
            ({"epsilon": 0.0}, "epsilon must be a number > 0"),
            ({"epsilon": -1.0}, "epsilon must be a number > 0"),
            ({"epsilon": math.nan}, "epsilon must be a number > 0"),
            ({"atol": -1e-5}, "atol must be a finite number >= 0"),
            ({"rtol": math.inf}, "rtol must be a finite number >= 0"),
            ({"max_task_drop": -0.1}, "max task-metric drop must be a finite number >= 0"),
            ({"task_metric": "top5"}, "must be 'top1' or 'module:function'"),
            ({"metric": "l5"}, "unknown accuracy metric 'l5'"),
        ],
    )
    def test_invalid(self, kw: dict, match: str) -> None:
        with pytest.raises(ConfigError, match=match):
            AccuracySettings(**kw)

    def test_from_json_unknown_key(self) -> None:
        with pytest.raises(ConfigError, match=r"unknown accuracy setting\(s\) \['eps'\]"):
            AccuracySettings.from_json({"eps": 1})


class TestGate:
    """evaluate(): loss >= ε fails, task-metric drops fail, reasons explain."""

    def test_epsilon_is_inclusive(self) -> None:
        """trtexec fails at loss >= threshold: l1 = 0.375 fails at ε 0.375, passes above."""
        golden = {"y": R}
        result, passed, reason = evaluate({"y": A}, golden, None, AccuracySettings(metric="l1", epsilon=0.375), None)
        assert not passed
        assert reason == "output 'y' l1 loss 0.375 >= epsilon 0.375"
        assert result == AccuracyResult(metric="l1", losses={"y": 0.375})
        _, passed, reason = evaluate({"y": A}, golden, None, AccuracySettings(metric="l1", epsilon=0.376), None)
        assert passed and reason == ""

    def test_any_output_fails_the_route(self) -> None:
        """One bad output among good ones fails the route."""
        s = AccuracySettings(metric="lInf", epsilon=0.5)
        _, passed, reason = evaluate({"a": R, "b": A}, {"a": R, "b": R}, None, s, None)
        assert not passed
        assert reason == "output 'b' lInf loss 1 >= epsilon 0.5"

    def test_no_epsilon_still_fails_uncomparable(self) -> None:
        """Without ε large losses pass, but a shape mismatch or NaN still fails with its cause."""
        s = AccuracySettings(metric="l2")
        _, passed, _ = evaluate({"y": A * 100}, {"y": R}, None, s, None)
        assert passed
        result, passed, reason = evaluate({"y": A[:2]}, {"y": R}, None, s, None)
        assert not passed
        assert result.losses == {"y": math.inf}
        assert reason == "output 'y' has shape (2,), reference has shape (4,)"

    def test_task_metric_drop(self) -> None:
        """top1 may drop by max_task_drop below the reference, not more."""
        logits = np.array([[0.0, 1.0]] * 10)
        labels = np.array([1] * 9 + [0])  # top1 = 0.9
        s = AccuracySettings(metric="l1", task_metric="top1", max_task_drop=0.05)
        golden = {"y": logits}
        result, passed, reason = evaluate({"y": logits}, golden, labels, s, 0.95)
        assert result.task_metric == 0.9
        assert result.task_metric_name == "top1"
        assert passed, reason  # drop 0.05 == allowed
        _, passed, reason = evaluate({"y": logits}, golden, labels, s, 1.0)
        assert not passed
        assert reason == "task metric top1 dropped 0.1 (0.9 vs reference 1; allowed 0.05)"
        # the reference run itself (no reference value yet) and no allowed drop never gate
        assert evaluate({"y": logits}, golden, labels, s, None)[1]
        s_free = AccuracySettings(metric="l1", task_metric="top1")
        assert evaluate({"y": logits}, golden, labels, s_free, 1.0)[1]

    def test_user_errors_are_gptuner_errors(self) -> None:
        """A task metric needing labels with none is a GptunerError, not a traceback."""
        s = AccuracySettings(task_metric="top1", max_task_drop=0.0)
        with pytest.raises(GptunerError, match="needs labels"):
            evaluate({"y": A}, {"y": A}, None, s, 1.0)


def _rec(number: int, state: CandidateState, losses: dict[str, float] | None, task=None) -> CandidateRecord:
    latency = LatencyStats(
        median_ms=1.0, mean_ms=1.0, min_ms=1.0, p5_ms=1.0, p95_ms=1.0, p99_ms=1.0, cv=0.0,
        ci_low_ms=1.0, ci_high_ms=1.0, n_samples=10,
    )
    acc = None
    if losses is not None:
        acc = AccuracyResult(metric="l2", losses=losses, task_metric=task, task_metric_name="top1" if task is not None else None)
    return CandidateRecord(
        number=number, requested_route=f"-k={number}", state=state, accuracy=acc,
        latency=None if state in (CandidateState.CRASHED, CandidateState.BUILD_FAILED) else latency,
    )


class TestRerank:
    """Changing ε re-ranks stored results without re-running."""

    def test_loosen_and_tighten(self) -> None:
        records = [
            _rec(0, CandidateState.COMPLETE, {"y": 0.0}),
            _rec(1, CandidateState.ACCURACY_FAILED, {"y": 2e-3}),
            _rec(2, CandidateState.COMPLETE, {"y": 5e-4}),
            _rec(3, CandidateState.CRASHED, None),
            _rec(4, CandidateState.ACCURACY_FAILED, {"y": math.inf}),
        ]
        tight = rerank(records, AccuracySettings(metric="l2", epsilon=1e-4), None)
        assert {n: v.eligible for n, v in tight.items()} == {0: True, 1: False, 2: False, 3: False, 4: False}
        assert tight[2].reason == "output 'y' l2 loss 0.0005 >= epsilon 0.0001"
        assert tight[3].reason == "state CRASHED"
        loose = rerank(records, AccuracySettings(metric="l2", epsilon=1e-2), None)
        assert {n: v.eligible for n, v in loose.items()} == {0: True, 1: True, 2: True, 3: False, 4: False}
        assert "could not be compared" in loose[4].reason
        none = rerank(records, AccuracySettings(metric="l2"), None)
        assert [n for n, v in none.items() if v.eligible] == [0, 1, 2]

    def test_task_metric_rerank(self) -> None:
        """A looser allowed drop re-admits a candidate whose stored top1 dropped."""
        records = [_rec(0, CandidateState.COMPLETE, {"y": 0.0}, 0.9), _rec(1, CandidateState.ACCURACY_FAILED, {"y": 0.0}, 0.85)]
        strict = AccuracySettings(metric="l2", task_metric="top1", max_task_drop=0.01)
        assert [v.eligible for v in rerank(records, strict, 0.9).values()] == [True, False]
        loose = AccuracySettings(metric="l2", task_metric="top1", max_task_drop=0.1)
        assert [v.eligible for v in rerank(records, loose, 0.9).values()] == [True, True]

    def test_metric_change_needs_rerun(self) -> None:
        """Stored l2 losses cannot be re-ranked as l0."""
        with pytest.raises(ConfigError, match="stored losses use metric 'l2', settings ask for 'l0'"):
            rerank([_rec(0, CandidateState.COMPLETE, {"y": 0.0})], AccuracySettings(metric="l0"), None)
        with pytest.raises(ConfigError, match="stored losses use metric"):
            check(AccuracyResult(metric="cos", losses={}), AccuracySettings(metric="l1"), None)


# -- the gate aimed where users need it ------------------------------------------------------
class TestPerOutputGate:
    """Outputs to gate, ε per output, an explicit no-gate, task metrics with golden outputs."""

    GOLDEN = {"sentence_embedding": np.ones(8), "last_hidden_state": np.ones((4, 8))}

    def moved(self, emb: float, hidden: float) -> dict[str, np.ndarray]:
        return {
            "sentence_embedding": np.ones(8) + emb,
            "last_hidden_state": np.ones((4, 8)) + hidden,
        }

    def test_epsilon_per_output_with_default(self) -> None:
        """The embedding's own ε gates it; the default ε gates the rest."""
        settings = AccuracySettings(
            metric="lInf", epsilon=0.5, output_epsilons={"sentence_embedding": 1e-3}
        )
        _, passed, reason = evaluate(self.moved(1e-4, 0.1), self.GOLDEN, None, settings, None)
        assert passed, reason
        _, passed, reason = evaluate(self.moved(2e-3, 0.1), self.GOLDEN, None, settings, None)
        assert not passed
        assert reason == "output 'sentence_embedding' lInf loss 0.002 >= epsilon 0.001"

    def test_only_chosen_outputs_are_gated(self) -> None:
        """last_hidden_state may move when only sentence_embedding is gated; losses are kept."""
        settings = AccuracySettings(metric="lInf", epsilon=1e-3, outputs=("sentence_embedding",))
        result, passed, reason = evaluate(self.moved(1e-4, 5.0), self.GOLDEN, None, settings, None)
        assert passed, reason
        assert result.losses["last_hidden_state"] == pytest.approx(5.0)
        with pytest.raises(ConfigError, match=r"output\(s\) \['embedding'\] .* not model outputs"):
            AccuracySettings(epsilon=1.0, outputs=("embedding",)).check_outputs(list(self.GOLDEN))
        with pytest.raises(ConfigError, match=r"\['embedding'\] are not model outputs"):
            evaluate(self.GOLDEN, self.GOLDEN, None, AccuracySettings(epsilon=1.0, outputs=("embedding",)), None)

    def test_settings_round_trip(self) -> None:
        s = AccuracySettings(
            epsilon=0.1, outputs=("a",), output_epsilons={"a": 0.01}, task_output="p"
        )
        assert AccuracySettings.from_json(s.to_json()) == s
        assert s.epsilon_for("a") == 0.01 and s.epsilon_for("b") == 0.1

    def test_no_gate_only_when_asked(self) -> None:
        """Without ε or a task-metric drop the gate refuses, unless no_gate=True (then a warning)."""
        from gptuner_core.accuracy import gate_warning
        from gptuner_core.accuracy import require_gate

        with pytest.raises(ConfigError, match=r"no accuracy gate: .*--epsilon.*--no-gate"):
            require_gate(AccuracySettings())
        require_gate(AccuracySettings(epsilon=0.1))
        require_gate(AccuracySettings(task_metric="top1", max_task_drop=0.01))
        ungated = AccuracySettings(no_gate=True)
        require_gate(ungated)
        assert gate_warning(ungated).startswith("warning: no accuracy gate")
        assert gate_warning(AccuracySettings(epsilon=0.1)) == ""

    def test_task_metric_receives_golden(self, tmp_path: Path) -> None:
        """A metric taking (outputs, labels, golden) gets the golden outputs (cosine fidelity)."""
        metric = tmp_path / "fidelity.py"
        metric.write_text(textwrap.dedent('''
            import numpy as np
            def cosine(outputs, labels, golden):
                a, b = outputs["sentence_embedding"], golden["sentence_embedding"]
                return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        '''))
        spec = f"{metric}:cosine"
        settings = AccuracySettings(task_metric=spec, max_task_drop=0.01)
        result, passed, _ = evaluate(self.moved(0.0, 0.0), self.GOLDEN, None, settings, 1.0)
        assert passed and result.task_metric == pytest.approx(1.0)
        flipped = {"sentence_embedding": -np.ones(8), "last_hidden_state": np.ones((4, 8))}
        result, passed, _ = evaluate(flipped, self.GOLDEN, None, settings, 1.0)
        assert not passed and result.task_metric == pytest.approx(-1.0)
        assert task_metric_value(spec, self.GOLDEN, None, golden=self.GOLDEN) == pytest.approx(1.0)


class TestTaskOutput:
    """top1 on sklearn-style outputs: label (int64, (N,)) first, probabilities (N, C) second."""

    OUTS = {
        "label": np.array([0, 1, 1, 0], dtype=np.int64),
        "probabilities": np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]], np.float32),
    }
    LABELS = np.array([0, 1, 1, 0])

    def test_auto_picks_the_scores_not_the_labels(self) -> None:
        """Without task_output, top1 uses the (N, C) scores: 3 of 4 right (row 2 wrong)."""
        assert top1(self.OUTS, self.LABELS) == pytest.approx(0.75)

    def test_integer_label_output_compared_directly(self) -> None:
        """task_output='label' compares predicted labels to labels (no argmax over one value)."""
        assert top1(self.OUTS, self.LABELS, "label") == pytest.approx(1.0)

    def test_task_output_in_settings(self) -> None:
        settings = AccuracySettings(task_metric="top1", task_output="probabilities", epsilon=1.0)
        result, _, _ = evaluate(self.OUTS, self.OUTS, self.LABELS, settings, None)
        assert result.task_metric == pytest.approx(0.75)
