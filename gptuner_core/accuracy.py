"""The accuracy gate: accuracy filters, performance ranks.

Element-wise losses follow trtexec's ``--accuracyAlgorithm`` names and semantics (all >= 0, lower
is better, 0 = perfect match), computed in float64 over the whole tensor:

======  =========  ===============================================================
name    display    loss
======  =========  ===============================================================
l0      L0         fraction of elements with ``|a - r| > atol + rtol * |r|``
l1      L1         mean absolute error
l2      L2         mean *squared* error
lInf    LInf       max absolute error
cos     Cosine     ``1 - cos(a, r)`` (both all-zero: 0; one all-zero: 1), clamped to [0, 2]
======  =========  ===============================================================

``atol``/``rtol`` only affect ``l0``. The metrics are not comparable with each other: the same
mismatch can be 1.0 in L0 and 3e-6 in L2, so pick ε per metric.

A candidate output that cannot be compared gets loss ``inf`` and a reason: a missing output, a
shape mismatch, a non-numeric dtype, or non-finite values (NaN, or an infinity the reference does
not have at the same position; the same infinity on both sides counts as an exact match).

The gate (:func:`evaluate`, :func:`check`): a route fails if any output's loss ``>= epsilon``
(trtexec uses ``>=``; ``epsilon=None`` disables this part) or any loss is infinite, or if the task
metric (higher is better: ``top1`` against labels, or a user ``module:function``) dropped by more
than ``max_task_drop`` below the reference route's value. Losses are stored, so :func:`rerank`
re-applies a changed ε (or allowed drop) to stored results without re-running anything.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import numpy as np

from gptuner_core.errors import ConfigError
from gptuner_core.errors import DatasetError
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateState


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterable
    from collections.abc import Mapping

    from gptuner_core.records import CandidateRecord

    TaskMetric = Callable[[dict[str, np.ndarray], np.ndarray | None], float]


METRICS: tuple[str, ...] = ("l0", "l1", "l2", "lInf", "cos")
#: trtexec's header/log display names (tuning-cache ``accuracy_algorithm``).
DISPLAY_NAMES: dict[str, str] = {"l0": "L0", "l1": "L1", "l2": "L2", "lInf": "LInf", "cos": "Cosine"}
_FROM_DISPLAY = {v: k for k, v in DISPLAY_NAMES.items()}
TOP1 = "top1"


# -- metric names --------------------------------------------------------------------------
def normalize_metric(name: str) -> str:
    """The CLI spelling (``l0``... ``cos``) of a metric given by CLI or display name.

    Exact names first (``lInf``, ``LInf``), then case-insensitively (``linf``, ``COSINE``).
    """
    if name in DISPLAY_NAMES:
        return name
    if name in _FROM_DISPLAY:
        return _FROM_DISPLAY[name]
    folded = str(name).lower()
    for cli, display in DISPLAY_NAMES.items():
        if folded in (cli.lower(), display.lower()):
            return cli
    msg = (
        f"unknown accuracy metric {name!r} (allowed: {', '.join(METRICS)}; "
        f"or trtexec display names {', '.join(DISPLAY_NAMES.values())})"
    )
    raise ConfigError(msg)


def display_name(metric: str) -> str:
    """trtexec's display name: ``l0 -> L0``, ``lInf -> LInf``, ``cos -> Cosine``."""
    return DISPLAY_NAMES[normalize_metric(metric)]


def metric_from_display(name: str) -> str:
    """The CLI name of a trtexec display name: ``L0 -> l0``, ``Cosine -> cos``."""
    return normalize_metric(name)


# -- element-wise losses -------------------------------------------------------------------
class OutputLoss(NamedTuple):
    """One output's loss, and why it is ``inf`` when it could not be compared ("" otherwise)."""

    loss: float
    reason: str = ""


def _as_float64(array: Any, what: str) -> np.ndarray | str:
    arr = np.asarray(array)
    if arr.dtype.kind not in "biuf":
        return f"{what} has dtype {arr.dtype} (expected a real numeric or bool dtype)"
    return arr.astype(np.float64, copy=False)


def compare(
    output: Any, reference: Any, metric: str, *, atol: float = 1e-5, rtol: float = 1e-5,
    name: str = "output",
) -> OutputLoss:
    """Loss of one candidate output against its reference (see the module docstring)."""
    metric = normalize_metric(metric)
    a = _as_float64(output, f"output '{name}'")
    if isinstance(a, str):
        return OutputLoss(math.inf, a)
    r = _as_float64(reference, f"reference of output '{name}'")
    if isinstance(r, str):
        return OutputLoss(math.inf, r)
    if a.shape != r.shape:
        return OutputLoss(
            math.inf, f"output '{name}' has shape {a.shape}, reference has shape {r.shape}"
        )
    if a.size == 0:
        return OutputLoss(0.0)
    a = a.ravel()
    r = r.ravel()
    finite_a = np.isfinite(a)
    finite_r = np.isfinite(r)
    if not (finite_a.all() and finite_r.all()):
        same_inf = ~finite_a & (a == r)  # equal infinities match exactly; NaN != NaN
        bad_a = int((~finite_a & ~same_inf).sum())
        bad_r = int((~finite_r & ~same_inf).sum())
        if bad_a or bad_r:
            where = f"output '{name}'" if bad_a else f"reference of output '{name}'"
            n_bad = bad_a or bad_r
            return OutputLoss(math.inf, f"{where} has {n_bad} non-finite value(s) (nan/inf)")
        keep = ~same_inf
        a = a[keep]
        r = r[keep]
        if a.size == 0:
            return OutputLoss(0.0)
        n_total = keep.size
    else:
        n_total = a.size
    # masked-out equal infinities count as exact matches in the means
    diff = np.abs(a - r)
    if metric == "l0":
        loss = float(np.count_nonzero(diff > atol + rtol * np.abs(r)) / n_total)
    elif metric == "l1":
        loss = float(diff.sum() / n_total)
    elif metric == "l2":
        loss = float(np.dot(diff, diff) / n_total)
    elif metric == "lInf":
        loss = float(diff.max())
    else:
        loss = _cosine_loss(a, r)
    if not math.isfinite(loss):  # overflow of huge finite values
        return OutputLoss(math.inf, f"output '{name}': {metric} loss overflowed float64")
    return OutputLoss(loss)


def _cosine_loss(a: np.ndarray, r: np.ndarray) -> float:
    # scale first so squares of large values cannot overflow
    scale = max(float(np.abs(a).max()), float(np.abs(r).max()))
    if scale == 0.0:
        return 0.0
    a = a / scale
    r = r / scale
    na = math.sqrt(float(np.dot(a, a)))
    nr = math.sqrt(float(np.dot(r, r)))
    if na == 0.0 or nr == 0.0:
        return 1.0
    cos = float(np.dot(a, r)) / (na * nr)
    return min(2.0, max(0.0, 1.0 - cos))


def compare_outputs(
    outputs: Mapping[str, Any], golden: Mapping[str, Any], metric: str, *,
    atol: float = 1e-5, rtol: float = 1e-5,
) -> dict[str, OutputLoss]:
    """Loss per golden output name; a golden output the candidate lacks gets ``inf``."""
    metric = normalize_metric(metric)
    result: dict[str, OutputLoss] = {}
    for name, reference in golden.items():
        if name not in outputs:
            result[name] = OutputLoss(
                math.inf, f"output '{name}' missing (candidate outputs: {sorted(outputs)})"
            )
            continue
        result[name] = compare(outputs[name], reference, metric, atol=atol, rtol=rtol, name=name)
    return result


def output_losses(
    outputs: Mapping[str, Any], golden: Mapping[str, Any], metric: str,
    atol: float = 1e-5, rtol: float = 1e-5,
) -> dict[str, float]:
    """Per-output losses (``inf`` when an output cannot be compared; see :func:`compare_outputs`
    for the reasons)."""
    compared = compare_outputs(outputs, golden, metric, atol=atol, rtol=rtol)
    return {name: c.loss for name, c in compared.items()}


# -- task metrics --------------------------------------------------------------------------
def top1(
    outputs: Mapping[str, Any], labels: Any, output_name: str | None = None
) -> float:
    """Top-1 accuracy: argmax over the last axis of the named (or first) output vs ``labels``.

    ``labels`` are integer class ids with one entry per prediction (``(N,)`` for ``(N, C)``
    logits), or one-hot/probability rows of the output's own shape (argmax is taken of both).
    """
    if labels is None:
        msg = "task metric 'top1' needs labels (add a 'labels' array to the dataset .npz)"
        raise DatasetError(msg)
    if not outputs:
        msg = "task metric 'top1': the model produced no outputs"
        raise ConfigError(msg)
    if output_name is None:
        output_name = next(iter(outputs))
    elif output_name not in outputs:
        msg = f"task metric 'top1': output '{output_name}' not found (outputs: {list(outputs)})"
        raise ConfigError(msg)
    out = np.asarray(outputs[output_name])
    if out.ndim == 0 or out.shape[-1] == 0:
        msg = (
            f"task metric 'top1': output '{output_name}' has shape {out.shape} "
            "(expected scores over classes in the last axis)"
        )
        raise ConfigError(msg)
    preds = np.argmax(out, axis=-1).ravel()
    lab = np.asarray(labels)
    if lab.shape == out.shape and out.ndim > 1:
        lab = np.argmax(lab, axis=-1)
    lab = lab.ravel()
    if lab.dtype.kind == "f":
        if not np.all(np.isfinite(lab)) or not np.all(lab == np.round(lab)):
            msg = "task metric 'top1': labels must be integer class ids (got non-integer floats)"
            raise DatasetError(msg)
    elif lab.dtype.kind not in "iub":
        msg = f"task metric 'top1': labels must be integer class ids (got dtype {lab.dtype})"
        raise DatasetError(msg)
    if lab.size != preds.size:
        msg = (
            f"task metric 'top1': {lab.size} labels for {preds.size} predictions of output "
            f"'{output_name}' with shape {out.shape} (expected one label per row)"
        )
        raise DatasetError(msg)
    if preds.size == 0:
        return 0.0
    return float(np.mean(preds == lab.astype(np.int64)))


def _check_spec_format(spec: str) -> tuple[str, str]:
    module, sep, func = str(spec).rpartition(":")
    if spec == TOP1:
        return "", TOP1
    if not sep or not module or not func or not func.isidentifier():
        msg = (
            f"task metric must be 'top1' or 'module:function' (e.g. 'mymetrics:accuracy' or "
            f"'path/to/metrics.py:accuracy') (got {spec!r})"
        )
        raise ConfigError(msg)
    return module, func


def load_task_metric(spec: str) -> TaskMetric:
    """Resolve ``"top1"`` or ``"module:function"`` (module may be a ``.py`` path) to a callable
    ``fn(outputs: dict[str, ndarray], labels: ndarray | None) -> float``."""
    module_name, func_name = _check_spec_format(spec)
    if func_name == TOP1 and not module_name:
        return top1
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not path.is_file():
            msg = f"task metric {spec!r}: file '{path}' not found"
            raise ConfigError(msg)
        mod_key = f"_gptuner_task_metric_{path.stem}_{abs(hash(str(path.resolve())))}"
        file_spec = importlib.util.spec_from_file_location(mod_key, path)
        assert file_spec is not None and file_spec.loader is not None
        module = importlib.util.module_from_spec(file_spec)
        try:
            file_spec.loader.exec_module(module)
        except Exception as exc:
            msg = f"task metric {spec!r}: importing '{path}' failed: {exc!r}"
            raise ConfigError(msg) from exc
        sys.modules.setdefault(mod_key, module)
    else:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            msg = f"task metric {spec!r}: cannot import module '{module_name}': {exc!r}"
            raise ConfigError(msg) from exc
    fn = getattr(module, func_name, None)
    if fn is None:
        msg = f"task metric {spec!r}: module '{module_name}' has no attribute '{func_name}'"
        raise ConfigError(msg)
    if not callable(fn):
        msg = f"task metric {spec!r}: '{func_name}' is a {type(fn).__name__}, not a function"
        raise ConfigError(msg)
    return fn


def task_metric_value(
    spec: str, outputs: Mapping[str, Any], labels: Any, *, output_name: str | None = None
) -> float:
    """Evaluate a task metric spec; the result must be a real number."""
    fn = load_task_metric(spec)
    if fn is top1:
        return top1(outputs, labels, output_name)
    try:
        value = fn(dict(outputs), labels)
    except Exception as exc:
        msg = f"task metric {spec!r} raised {exc!r}"
        raise ConfigError(msg) from exc
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        msg = f"task metric {spec!r} returned {type(value).__name__} (expected a number)"
        raise ConfigError(msg)
    return float(value)


# -- the gate ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class AccuracySettings:
    """How candidates are gated.

    Attributes:
        metric: element-wise loss (``l0|l1|l2|lInf|cos``; display names accepted and normalized).
        atol/rtol: ``l0`` tolerances (ignored by the other metrics), both >= 0.
        epsilon: fail when any output's loss >= epsilon; ``None`` = no element-wise gate (losses
            are still recorded, and non-finite/shape failures still fail).
        task_metric: ``None``, ``"top1"`` or ``"module:function"`` (higher is better).
        max_task_drop: absolute drop allowed below the reference's task metric (e.g. 0.01);
            ``None`` = record the task metric without gating on it.
        task_output: output used by ``top1`` (default: the first output).
    """

    metric: str = "l0"
    atol: float = 1e-5
    rtol: float = 1e-5
    epsilon: float | None = None
    task_metric: str | None = None
    max_task_drop: float | None = None
    task_output: str | None = None

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

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "atol": self.atol,
            "rtol": self.rtol,
            "epsilon": self.epsilon,
            "task_metric": self.task_metric,
            "max_task_drop": self.max_task_drop,
            "task_output": self.task_output,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AccuracySettings:
        allowed = sorted(cls.__dataclass_fields__)
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            msg = f"unknown accuracy setting(s) {unknown} (allowed: {allowed})"
            raise ConfigError(msg)
        return cls(**data)


def _real_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
        if math.isnan(loss) or math.isinf(loss):
            reasons.append(f"output '{name}' could not be compared ({settings.metric} loss {loss})")
        elif settings.epsilon is not None and loss >= settings.epsilon:
            reasons.append(
                f"output '{name}' {settings.metric} loss {loss:.6g} >= epsilon {settings.epsilon:g}"
            )
    if settings.task_metric is not None:
        stored_name = result.task_metric_name
        if stored_name is not None and stored_name != settings.task_metric:
            msg = (
                f"stored task metric is '{stored_name}', settings ask for "
                f"'{settings.task_metric}' (changing it needs re-running the candidates)"
            )
            raise ConfigError(msg)
        value = result.task_metric
        if value is None or math.isnan(value):
            reasons.append(f"task metric {settings.task_metric} has no value")
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
    compared = compare_outputs(outputs, golden, settings.metric, atol=settings.atol, rtol=settings.rtol)
    task_value = None
    if settings.task_metric is not None:
        task_value = task_metric_value(
            settings.task_metric, outputs, labels, output_name=settings.task_output
        )
    result = AccuracyResult(
        metric=settings.metric,
        losses={name: c.loss for name, c in compared.items()},
        task_metric=task_value,
        task_metric_name=settings.task_metric,
    )
    passed, reason = check(result, settings, reference_task_metric)
    structural = [c.reason for c in compared.values() if c.reason]
    if structural:  # the precise cause replaces the generic "could not be compared"
        others = [p for p in reason.split("; ") if p and "could not be compared" not in p]
        reason = "; ".join(structural + others)
    return result, passed, reason


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
    gate_active = settings.epsilon is not None or settings.task_metric is not None
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


__all__ = [
    "DISPLAY_NAMES",
    "METRICS",
    "TOP1",
    "AccuracySettings",
    "OutputLoss",
    "Verdict",
    "check",
    "compare",
    "compare_outputs",
    "display_name",
    "evaluate",
    "load_task_metric",
    "metric_from_display",
    "normalize_metric",
    "output_losses",
    "rerank",
    "task_metric_value",
    "top1",
]
