"""Element-wise losses between a candidate's outputs and the golden ones (trtexec semantics).

See :mod:`gptuner_core.accuracy` for the table of metrics.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import numpy as np

from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from collections.abc import Mapping


METRICS: tuple[str, ...] = ("l0", "l1", "l2", "lInf", "cos")
#: trtexec's header/log display names (tuning-cache ``accuracy_algorithm``).
DISPLAY_NAMES: dict[str, str] = {"l0": "L0", "l1": "L1", "l2": "L2", "lInf": "LInf", "cos": "Cosine"}
_FROM_DISPLAY = {v: k for k, v in DISPLAY_NAMES.items()}
#: the built-in task metric.
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
