"""The gate: which candidates are eligible, from their losses and task metric."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

from gptuner_core.accuracy.losses import compare_outputs
from gptuner_core.accuracy.losses import normalize_metric
from gptuner_core.accuracy.slices import canonical
from gptuner_core.accuracy.slices import slice_losses
from gptuner_core.accuracy.task import _check_spec_format
from gptuner_core.accuracy.task import task_metric_result
from gptuner_core.errors import ConfigError
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateState


if TYPE_CHECKING:
    from collections.abc import Iterable
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class AccuracySettings:
    """How candidates are gated.

    Attributes:
        metric: element-wise loss (``l0|l1|l2|lInf|cos``; display names accepted and normalized).
        atol/rtol: ``l0`` tolerances (ignored by the other metrics), both >= 0.
        epsilon: fail when any output's loss >= epsilon; ``None`` = no element-wise gate (losses
            are still recorded, and non-finite/shape failures still fail).
        task_metric: ``None``, ``"top1"``, a built-in agreement metric with the default route
            (``detection(...)``, ``topk(k=5)``, ``tokens``: :mod:`~gptuner_core.accuracy.agreement`)
            or ``"module:function"`` (higher is better; a value that is not a finite number fails).
        max_task_drop: absolute drop allowed below the reference's task metric (e.g. 0.01);
            ``None`` = record the task metric without gating on it.
        task_output: output (or slice) the task metric reads (default: :func:`select_task_output`,
            the class scores rather than sklearn's ``label``).
        outputs: the outputs, or slices of them in NumPy syntax (``output0[:, 4:, :]``,
            :mod:`~gptuner_core.accuracy.slices`), the gate applies to (``None`` = all); losses of
            the others are still recorded, but they fail nothing (e.g. gate
            ``sentence_embedding``, not ``last_hidden_state``). Stored in canonical spelling.
        output_epsilons: ε per output or slice (a mapping is accepted; stored as sorted pairs),
            overriding ``epsilon`` (the default for outputs not listed); each slice named here
            gets its own loss.
        no_gate: the user asked explicitly for no gate (:func:`require_gate` refuses a settings
            object with no gate otherwise; :func:`gate_warning` gives the warning text).

    Example:
        >>> s = AccuracySettings(metric="cos", epsilon=0.01, output_epsilons={"emb": 1e-3})
        >>> s.epsilon_for("emb"), s.epsilon_for("logits")
        (0.001, 0.01)
    """

    metric: str = "l0"
    atol: float = 1e-5
    rtol: float = 1e-5
    epsilon: float | None = None
    task_metric: str | None = None
    max_task_drop: float | None = None
    task_output: str | None = None
    outputs: tuple[str, ...] | None = None
    output_epsilons: tuple[tuple[str, float], ...] = ()
    no_gate: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", normalize_metric(self.metric))
        for name in ("atol", "rtol"):
            value = getattr(self, name)
            if not _real_number(value) or not math.isfinite(value) or value < 0:
                msg = f"accuracy {name} must be a finite number >= 0 (got {value!r})"
                raise ConfigError(msg)
        if self.epsilon is not None and (
            not _real_number(self.epsilon) or not self.epsilon > 0 or math.isnan(self.epsilon)
        ):
            msg = f"accuracy epsilon must be a number > 0, or None to disable (got {self.epsilon!r})"
            raise ConfigError(msg)
        if self.task_metric is not None:
            _check_spec_format(self.task_metric)
        if self.max_task_drop is not None and (
            not _real_number(self.max_task_drop)
            or not math.isfinite(self.max_task_drop)
            or self.max_task_drop < 0
        ):
            msg = f"max task-metric drop must be a finite number >= 0 (got {self.max_task_drop!r})"
            raise ConfigError(msg)
        if self.outputs is not None:
            if isinstance(self.outputs, str) or not all(isinstance(o, str) for o in self.outputs):
                msg = f"accuracy outputs must be a list of output names or slices (got {self.outputs!r})"
                raise ConfigError(msg)
            object.__setattr__(self, "outputs", tuple(canonical(o) for o in self.outputs))
        if self.task_output is not None:
            object.__setattr__(self, "task_output", canonical(self.task_output))
        pairs = (
            self.output_epsilons.items()
            if isinstance(self.output_epsilons, Mapping)
            else self.output_epsilons
        )
        normalized = []
        for pair in pairs:
            name, eps = pair
            if not isinstance(name, str) or not _real_number(eps) or not eps > 0 or math.isnan(eps):
                msg = f"epsilon of output {name!r} must be a number > 0 (got {eps!r})"
                raise ConfigError(msg)
            normalized.append((canonical(name), float(eps)))
        object.__setattr__(self, "output_epsilons", tuple(sorted(normalized)))

    def epsilon_for(self, output: str) -> float | None:
        """ε for one output: its own, else the default ``epsilon``."""
        return dict(self.output_epsilons).get(output, self.epsilon)

    def gates(self, output: str) -> bool:
        """Whether the gate applies to ``output``."""
        return self.outputs is None or output in self.outputs

    @property
    def gated(self) -> bool:
        """Whether any element-wise or task-metric gate is set."""
        return (
            self.epsilon is not None
            or bool(self.output_epsilons)
            or (self.task_metric is not None and self.max_task_drop is not None)
        )

    @property
    def selectors(self) -> tuple[str, ...]:
        """Every gated selector (whole outputs and slices), each once, in the order given."""
        wanted = [*(self.outputs or ()), *(n for n, _ in self.output_epsilons)]
        return tuple(dict.fromkeys(wanted))

    def check_outputs(self, outputs: Sequence[str] | Mapping[str, Sequence[Any]]) -> None:
        """Refuse gated outputs, per-output ε names and ``task_output`` that the model does not
        have, and slices that cannot fit their output's shape (call with the model's output
        names, or names mapped to shapes, before the study starts; dynamic dims fit any index)."""
        from gptuner_core.accuracy.slices import OutputSlice

        shapes = dict(outputs) if isinstance(outputs, Mapping) else dict.fromkeys(outputs)
        wanted = [*self.selectors, *([self.task_output] if self.task_output else [])]
        parsed = [OutputSlice.parse(w) for w in wanted]
        unknown = sorted({p.text for p in parsed if p.output not in shapes})
        if unknown:
            msg = f"accuracy output(s) {unknown} are not model outputs (outputs: {list(shapes)})"
            raise ConfigError(msg)
        for sel in parsed:
            shape = shapes[sel.output]
            why = sel.misfit(tuple(shape)) if shape is not None else ""
            if why:
                msg = f"{why} (shape {list(shape)}; expected a slice that selects part of it)"
                raise ConfigError(msg)

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "atol": self.atol,
            "rtol": self.rtol,
            "epsilon": self.epsilon,
            "task_metric": self.task_metric,
            "max_task_drop": self.max_task_drop,
            "task_output": self.task_output,
            "outputs": None if self.outputs is None else list(self.outputs),
            "output_epsilons": dict(self.output_epsilons),
            "no_gate": self.no_gate,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AccuracySettings:
        allowed = sorted(cls.__dataclass_fields__)
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            msg = f"unknown accuracy setting(s) {unknown} (allowed: {allowed})"
            raise ConfigError(msg)
        data = dict(data)
        if data.get("outputs") is not None:
            data["outputs"] = tuple(data["outputs"])
        return cls(**data)


def _real_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return _real_number(value) and math.isfinite(value)


def check(
    result: AccuracyResult, settings: AccuracySettings, reference_task_metric: float | None
) -> tuple[bool, str]:
    """Apply the gate to stored losses / task metric: ``(passed, reason)`` (reason "" if passed).

    Raises ConfigError when ``result`` was recorded with another metric or task metric than
    ``settings`` asks for (that needs re-running, not re-ranking).
    """
    if result.metric != settings.metric:
        msg = (
            f"stored losses use metric '{result.metric}', settings ask for '{settings.metric}' "
            "(changing the metric needs re-running the candidates; only epsilon and the "
            "allowed task-metric drop can be changed afterwards)"
        )
        raise ConfigError(msg)
    reasons = []
    for name, loss in result.losses.items():
        if not settings.gates(name):
            continue
        eps = settings.epsilon_for(name)
        if not _real_number(loss) or not math.isfinite(loss):
            reasons.append(f"output '{name}' could not be compared ({settings.metric} loss {loss!r})")
        elif eps is not None and loss >= eps:
            reasons.append(f"output '{name}' {settings.metric} loss {loss:.6g} >= epsilon {eps:g}")
    if settings.task_metric is not None:
        stored_name = result.task_metric_name
        if stored_name is not None and stored_name != settings.task_metric:
            msg = (
                f"stored task metric is '{stored_name}', settings ask for "
                f"'{settings.task_metric}' (changing it needs re-running the candidates)"
            )
            raise ConfigError(msg)
        value = result.task_metric
        if value is None:
            reasons.append(f"task metric {settings.task_metric} has no value")
        elif not _finite(value):
            reasons.append(f"task metric {settings.task_metric} is not a finite number ({value!r})")
        elif settings.max_task_drop is not None and reference_task_metric is not None \
                and not _finite(reference_task_metric):
            reasons.append(
                f"the reference's task metric {settings.task_metric} is not a finite number "
                f"({reference_task_metric!r}); nothing to compare against"
            )
        elif settings.max_task_drop is not None and reference_task_metric is not None:
            drop = reference_task_metric - value
            if drop > settings.max_task_drop + 1e-12:
                reasons.append(
                    f"task metric {settings.task_metric} dropped {drop:.4g} ({value:.4g} vs "
                    f"reference {reference_task_metric:.4g}; allowed {settings.max_task_drop:g})"
                )
    return (not reasons, "; ".join(reasons))


def evaluate(
    outputs: Mapping[str, Any],
    golden: Mapping[str, Any],
    labels: Any,
    settings: AccuracySettings,
    reference_task_metric: float | None,
) -> tuple[AccuracyResult, bool, str]:
    """Compare a candidate's outputs with the golden ones and apply the gate.

    Returns ``(AccuracyResult, passed, reason)``; ``reason`` explains every failure (structural
    problems such as a shape mismatch included) and is "" when the route passes.
    """
    task = None
    if settings.task_metric is not None:
        task = task_metric_result(
            settings.task_metric, outputs, labels, output_name=settings.task_output, golden=golden
        )
    return judge(outputs, golden, settings, reference_task_metric,
                 task_value=task.value if task else None, task_details=task.details if task else None)


def judge(
    outputs: Mapping[str, Any],
    golden: Mapping[str, Any],
    settings: AccuracySettings,
    reference_task_metric: float | None,
    *,
    task_value: float | None,
    task_details: Mapping[str, float] | None = None,
) -> tuple[AccuracyResult, bool, str]:
    """:func:`evaluate` with the task metric already computed (the engine computes it in the
    candidate's own process). Losses are stored per output and per gated slice."""
    settings.check_outputs(list(golden))  # a gated name that is no output would gate nothing
    compared = compare_outputs(outputs, golden, settings.metric, atol=settings.atol, rtol=settings.rtol)
    compared.update(slice_losses(outputs, golden, settings.selectors, settings.metric,
                                 atol=settings.atol, rtol=settings.rtol))
    result = AccuracyResult(
        metric=settings.metric,
        losses={name: c.loss for name, c in compared.items()},
        task_metric=task_value,
        task_metric_name=settings.task_metric,
        task_details=dict(task_details or {}),
    )
    passed, reason = check(result, settings, reference_task_metric)
    structural = [c.reason for n, c in compared.items() if c.reason and settings.gates(n)]
    if structural:  # the precise cause replaces the generic "could not be compared"
        others = [p for p in reason.split("; ") if p and "could not be compared" not in p]
        reason = "; ".join(structural + others)
    return result, passed, reason


def require_gate(settings: AccuracySettings) -> None:
    """Refuse settings without any gate unless ``no_gate`` was asked for explicitly: one line
    saying what is missing, what would do, and what was found."""
    if settings.gated or settings.no_gate:
        return
    task = (
        f"task metric {settings.task_metric} without --max-task-drop"
        if settings.task_metric is not None else "no task metric"
    )
    msg = (
        "no accuracy gate: without one every route passes, however wrong its outputs "
        "(expected --epsilon EPS, --epsilon OUTPUT=EPS, --task-metric with --max-task-drop, "
        f"or --no-gate to rank by speed only; found no epsilon, no per-output epsilon, {task})"
    )
    raise ConfigError(msg)


def gate_warning(settings: AccuracySettings) -> str:
    """The warning to show when a study runs without a gate ("" when it has one)."""
    if settings.gated:
        return ""
    return (
        "warning: no accuracy gate (--no-gate): routes are ranked by speed only; losses are "
        f"recorded ({settings.metric}) and can gate the study later (rerank with an epsilon)"
    )


class Verdict(NamedTuple):
    """New eligibility of a stored candidate under changed gate settings."""

    eligible: bool
    reason: str


_MEASURED_STATES = (CandidateState.COMPLETE, CandidateState.ACCURACY_FAILED, CandidateState.DUPLICATE)


def rerank(
    records: Iterable[CandidateRecord],
    settings: AccuracySettings,
    reference_task_metric: float | None,
) -> dict[int, Verdict]:
    """Re-apply the gate to stored losses (no re-run), e.g. after the user changes ε.

    A candidate is eligible when it finished with a latency (COMPLETE, DUPLICATE, or an
    ACCURACY_FAILED one that was still timed) and its stored accuracy passes :func:`check`.
    Crashed/failed builds, candidates without a latency, and candidates without stored accuracy
    while a gate is active stay ineligible, with the reason.
    """
    gate_active = settings.gated or settings.task_metric is not None
    verdicts: dict[int, Verdict] = {}
    for rec in records:
        if rec.state not in _MEASURED_STATES:
            verdicts[rec.number] = Verdict(False, f"state {rec.state.value}")
        elif rec.latency is None:
            verdicts[rec.number] = Verdict(False, "no latency measured")
        elif rec.accuracy is None:
            if gate_active:
                verdicts[rec.number] = Verdict(False, "no stored accuracy to gate on")
            else:
                verdicts[rec.number] = Verdict(True, "")
        else:
            passed, reason = check(rec.accuracy, settings, reference_task_metric)
            verdicts[rec.number] = Verdict(passed, reason)
    return verdicts
