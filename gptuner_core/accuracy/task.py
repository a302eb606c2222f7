"""Task metrics (higher is better): ``top1``, the built-in agreement metrics (``detection``,
``topk``, ``tokens``: :mod:`gptuner_core.accuracy.agreement`) and user ``module:function`` metrics."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import sys
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from gptuner_core.accuracy.losses import TOP1
from gptuner_core.errors import ConfigError
from gptuner_core.errors import DatasetError


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Mapping

    TaskMetric = Callable[..., float]


def top1(
    outputs: Mapping[str, Any], labels: Any, output_name: str | None = None
) -> float:
    """Top-1 accuracy of the named output (default: :func:`select_task_output`) vs ``labels``.

    A float output holds scores over classes in its last axis (argmax is taken); an integer
    output of one entry per row holds predicted class ids and is compared as it is (sklearn's
    ``label``). ``labels`` are integer class ids with one entry per prediction (``(N,)`` for
    ``(N, C)`` logits), or one-hot/probability rows of the output's own shape.
    """
    if labels is None:
        msg = "task metric 'top1' needs labels (add a 'labels' array to the dataset .npz)"
        raise DatasetError(msg)
    if not outputs:
        msg = "task metric 'top1': the model produced no outputs"
        raise ConfigError(msg)
    if output_name is None:
        output_name = select_task_output(outputs, labels)
    elif output_name not in outputs:
        msg = f"task metric 'top1': output '{output_name}' not found (outputs: {list(outputs)})"
        raise ConfigError(msg)
    out = np.asarray(outputs[output_name])
    lab = np.asarray(labels)
    if out.dtype.kind in "iu" and out.ndim >= 1 and (out.ndim == 1 or out.shape[-1] == 1):
        preds = out.ravel().astype(np.int64)  # predicted class ids, not scores
    elif out.ndim == 0 or out.shape[-1] == 0:
        msg = (
            f"task metric 'top1': output '{output_name}' has shape {out.shape} "
            "(expected scores over classes in the last axis)"
        )
        raise ConfigError(msg)
    else:
        preds = np.argmax(out, axis=-1).ravel()
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


def select_task_output(outputs: Mapping[str, Any], labels: Any = None) -> str:
    """The output a classification metric reads when none is named.

    The one float output with scores over two or more classes in its last axis (sklearn's
    ``probabilities`` beside its ``label``; a model's ``logits``), else the one integer output
    of one entry per label (predicted ids), else the first output.
    """
    n = None if labels is None else int(np.asarray(labels).shape[0]) if np.ndim(labels) else None
    scores, ids = [], []
    for name, value in outputs.items():
        arr = np.asarray(value)
        rows_ok = n is None or (arr.ndim >= 1 and arr.shape[0] == n)
        if arr.dtype.kind == "f" and arr.ndim >= 1 and arr.shape[-1] >= 2 and rows_ok:
            scores.append(name)
        elif arr.dtype.kind in "iu" and arr.ndim == 1 and rows_ok:
            ids.append(name)
    if len(scores) == 1:
        return scores[0]
    if not scores and len(ids) == 1:
        return ids[0]
    return next(iter(outputs))


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskResult:
    """A task metric's value and what a built-in reports beside it (detection: recall, ...)."""

    value: float
    details: dict[str, float] = field(default_factory=dict)


def _check_spec_format(spec: str) -> tuple[str, str]:
    from gptuner_core.accuracy.agreement import is_builtin
    from gptuner_core.accuracy.agreement import parse_builtin

    module, sep, func = str(spec).rpartition(":")
    if spec == TOP1:
        return "", TOP1
    if ":" not in str(spec) and is_builtin(spec):
        return "", parse_builtin(spec)[0]  # options checked here
    if not sep or not module or not func or not func.isidentifier():
        msg = (
            f"task metric must be 'top1' or 'module:function' (e.g. 'mymetrics:accuracy' or "
            f"'path/to/metrics.py:accuracy'), or a built-in agreement metric: detection, topk, "
            f"tokens, options in parentheses as in 'detection(conf=0.3)' (got {spec!r})"
        )
        raise ConfigError(msg)
    return module, func


def load_task_metric(spec: str) -> TaskMetric:
    """Resolve ``"top1"`` or ``"module:function"`` (module may be a ``.py`` path) to a callable
    ``fn(outputs, labels) -> float`` or ``fn(outputs, labels, golden) -> float`` (``golden``:
    the default route's outputs, e.g. for a fidelity metric such as embedding cosine)."""
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


def _takes_golden(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    if "golden" in params:
        return True
    positional = [
        p for p in params.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    varargs = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values())
    return len(positional) >= 3 or varargs


def task_metric_value(
    spec: str, outputs: Mapping[str, Any], labels: Any, *, output_name: str | None = None,
    golden: Mapping[str, Any] | None = None,
) -> float:
    """The value of :func:`task_metric_result`."""
    return task_metric_result(spec, outputs, labels, output_name=output_name, golden=golden).value


def task_metric_result(
    spec: str, outputs: Mapping[str, Any], labels: Any, *, output_name: str | None = None,
    golden: Mapping[str, Any] | None = None,
) -> TaskResult:
    """Evaluate a task metric spec; the result must be a finite real number (ConfigError naming
    what came back otherwise: NaN and infinities fail the candidate, they never pass it).

    A user metric with a third parameter (or one named ``golden``) receives the golden outputs
    (``golden``, or ``outputs`` themselves for the reference route when ``None``); the built-in
    agreement metrics compare ``output_name`` (an output or a slice) with the golden one.
    """
    golden = golden if golden is not None else outputs
    module, func = _check_spec_format(spec)
    if not module and func != TOP1:
        from gptuner_core.accuracy.agreement import agreement

        name = output_name or _only_output(spec, outputs, labels)
        out, ref = _selected(spec, name, outputs), _selected(spec, name, golden)
        value, details = agreement(spec, out, ref, where=f"output '{name}'")
        return TaskResult(value=_finite(spec, value), details=details)
    fn = load_task_metric(spec)
    if fn is top1:
        if output_name is not None and "[" in output_name:
            outputs = {output_name: _selected(spec, output_name, outputs)}
        return TaskResult(value=_finite(spec, top1(outputs, labels, output_name)))
    try:
        if _takes_golden(fn):
            value = fn(dict(outputs), labels, dict(golden))
        else:
            value = fn(dict(outputs), labels)
    except Exception as exc:
        msg = f"task metric {spec!r} raised {exc!r}"
        raise ConfigError(msg) from exc
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
        msg = f"task metric {spec!r} returned {type(value).__name__} (expected a number)"
        raise ConfigError(msg)
    return TaskResult(value=_finite(spec, value))


def _finite(spec: str, value: Any) -> float:
    value = float(value)
    if not math.isfinite(value):
        msg = f"task metric {spec!r} returned {value!r} (expected a finite number)"
        raise ConfigError(msg)
    return value


def _only_output(spec: str, outputs: Mapping[str, Any], labels: Any) -> str:
    if len(outputs) == 1:
        return next(iter(outputs))
    name = select_task_output(outputs, labels)
    if spec.startswith("detection"):
        msg = (f"task metric {spec!r}: the model has outputs {list(outputs)}; name the packed "
               "detection head with --task-output (an output or a slice of one)")
        raise ConfigError(msg)
    return name


def _selected(spec: str, selector: str, outputs: Mapping[str, Any]) -> np.ndarray:
    from gptuner_core.accuracy.slices import OutputSlice

    sel = OutputSlice.parse(selector)
    if sel.output not in outputs:
        msg = f"task metric {spec!r}: output '{sel.output}' not found (outputs: {list(outputs)})"
        raise ConfigError(msg)
    return sel.select(outputs[sel.output])
