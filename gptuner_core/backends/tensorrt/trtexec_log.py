"""trtexec's log lines: what the driver reads from a child's or a tuning run's stdout.

Formats (trtexec 11.1, ``tests/data/trt_trtexec_facts.json`` has them with their source lines):
``&&&& TASK_BEGIN|TASK_END|TASK_ABORT [iter=<i>] BuildRoute = '<route>'``, per-tensor
``Accuracy loss for tensor <name> (<ALGO>): <x>[ [FAIL: >= threshold <t>]]``,
``Best iteration: <route> (gpu_time_ms=<x>)``, ``Tuning summary: S / N iterations succeeded.``,
``Iteration [<i>] failed: <msg>``. Prefixes ``[MM/DD/YYYY-HH:MM:SS] [I]`` are optional.

``Using tuning build route: <route>`` is printed *before* ``setBuildRoute`` is called
(``sampleEngines.cpp``), so it only echoes the request: it is kept as
:attr:`LogSummary.requested_route_echo`, never as an effective route. When TensorRT rejects the
route, trtexec fails the build with ``IBuilderConfig::setBuildRoute failed for: <route>``
(:attr:`LogSummary.route_rejected`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


# -- log lines --------------------------------------------------------------------------------
_PREFIX = r"^(?:\[[^\]]*\]\s*)*(?:\[[IWEVF]\]\s*)?"
_TASK = re.compile(_PREFIX + r"&&&& (TASK_BEGIN|TASK_END|TASK_ABORT) \[iter=(\d+)\] BuildRoute = '(.*)'\s*$")
_ACC = re.compile(
    _PREFIX
    + r"Accuracy loss for tensor (.+) \(([A-Za-z0-9]+)\): ([-+0-9.eEinfaINFA]+)(?: \[FAIL: >= threshold ([-+0-9.eEinfa]+)\])?\s*$"
)
_BEST = re.compile(_PREFIX + r"Best iteration: (.*) \(gpu_time_ms=([-+0-9.eEinfa]+)\)\s*$")
_SUMMARY = re.compile(_PREFIX + r"Tuning summary: (\d+) / (\d+) iterations succeeded\.")
_ITER_FAILED = re.compile(_PREFIX + r"Iteration \[(\d+)\] failed: (.*)$")
_USING = re.compile(_PREFIX + r"Using tuning build route: (.*)$")
_REJECTED = re.compile(r"IBuilderConfig::setBuildRoute failed for: (.*)$")
_ACC_FAILED = "Accuracy validation FAILED"
_NONE_OK = "No tuning iteration succeeded; no engine written."


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskEvent:
    kind: str  # TASK_BEGIN | TASK_END | TASK_ABORT
    iter: int
    route: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AccuracyLine:
    tensor: str
    algorithm: str
    loss: float
    failed: bool
    threshold: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LogSummary:
    tasks: tuple[TaskEvent, ...] = ()
    accuracy: tuple[AccuracyLine, ...] = ()
    accuracy_failed: bool = False
    best_route: str | None = None
    best_gpu_time_ms: float | None = None
    succeeded: int | None = None
    total: int | None = None
    iteration_failures: tuple[tuple[int, str], ...] = ()
    requested_route_echo: str | None = None
    route_rejected: str | None = None
    none_succeeded: bool = False


def parse_log(text: str) -> LogSummary:
    """Pull the machine-readable facts out of trtexec's stdout (prefixes ``[..] [I]`` optional)."""
    tasks, acc, fails = [], [], []
    best_route = best_time = succeeded = total = echo = rejected = None
    acc_failed = none_ok = False
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if m := _TASK.match(line):
            tasks.append(TaskEvent(kind=m.group(1), iter=int(m.group(2)), route=m.group(3)))
        elif m := _ACC.match(line):
            thr = m.group(4)
            acc.append(
                AccuracyLine(
                    tensor=m.group(1),
                    algorithm=m.group(2),
                    loss=float(m.group(3)),
                    failed=thr is not None,
                    threshold=float(thr) if thr is not None else None,
                )
            )
        elif m := _BEST.match(line):
            best_route, best_time = m.group(1), float(m.group(2))
        elif m := _SUMMARY.match(line):
            succeeded, total = int(m.group(1)), int(m.group(2))
        elif m := _ITER_FAILED.match(line):
            fails.append((int(m.group(1)), m.group(2)))
        elif m := _USING.match(line):
            echo = m.group(1)
        elif m := _REJECTED.search(line):
            rejected = m.group(1)
        elif _ACC_FAILED in line:
            acc_failed = True
        elif _NONE_OK in line:
            none_ok = True
    return LogSummary(
        tasks=tuple(tasks),
        accuracy=tuple(acc),
        accuracy_failed=acc_failed,
        best_route=best_route,
        best_gpu_time_ms=best_time,
        succeeded=succeeded,
        total=total,
        iteration_failures=tuple(fails),
        requested_route_echo=echo,
        route_rejected=rejected,
        none_succeeded=none_ok,
    )
