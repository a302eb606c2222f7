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

The gate (:func:`evaluate`, :func:`check`): a route fails if a gated output's loss is
``>= `` its ε (trtexec uses ``>=``; ε per output with a default, ``None`` disables this part) or
is infinite, or if the task metric (higher is better: ``top1`` against labels, or a user
``module:function`` that may also receive the golden outputs) dropped by more than
``max_task_drop`` below the reference route's value. Which outputs are gated is a setting
(``outputs``): whole outputs or slices of them in NumPy syntax (``output0[:, 4:, :]``, see
:mod:`~gptuner_core.accuracy.slices`; losses stored per slice under that spelling). Built-in task
metrics compare with the default route's outputs (``detection``, ``topk``, ``tokens``: see
:mod:`~gptuner_core.accuracy.agreement`); a task metric or reference that is not a finite number
fails the gate. A study with no gate at all needs ``no_gate=True`` (:func:`require_gate`,
:func:`gate_warning`). Losses are stored, so :func:`rerank`
re-applies a changed ε (or allowed drop) to stored results without re-running anything.
"""

from __future__ import annotations

from gptuner_core.accuracy.gate import AccuracySettings
from gptuner_core.accuracy.gate import Verdict
from gptuner_core.accuracy.gate import check
from gptuner_core.accuracy.gate import evaluate
from gptuner_core.accuracy.gate import gate_warning
from gptuner_core.accuracy.gate import require_gate
from gptuner_core.accuracy.gate import rerank
from gptuner_core.accuracy.losses import DISPLAY_NAMES
from gptuner_core.accuracy.losses import METRICS
from gptuner_core.accuracy.losses import TOP1
from gptuner_core.accuracy.losses import OutputLoss
from gptuner_core.accuracy.losses import compare
from gptuner_core.accuracy.losses import compare_outputs
from gptuner_core.accuracy.losses import display_name
from gptuner_core.accuracy.losses import metric_from_display
from gptuner_core.accuracy.losses import normalize_metric
from gptuner_core.accuracy.losses import output_losses
from gptuner_core.accuracy.task import TaskResult
from gptuner_core.accuracy.task import load_task_metric
from gptuner_core.accuracy.task import select_task_output
from gptuner_core.accuracy.task import task_metric_result
from gptuner_core.accuracy.task import task_metric_value
from gptuner_core.accuracy.task import top1


__all__ = [
    "DISPLAY_NAMES",
    "METRICS",
    "TOP1",
    "AccuracySettings",
    "OutputLoss",
    "TaskResult",
    "Verdict",
    "check",
    "compare",
    "compare_outputs",
    "display_name",
    "evaluate",
    "gate_warning",
    "load_task_metric",
    "metric_from_display",
    "normalize_metric",
    "output_losses",
    "require_gate",
    "rerank",
    "select_task_output",
    "task_metric_result",
    "task_metric_value",
    "top1",
]
