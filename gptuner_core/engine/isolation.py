"""Run one candidate in a fresh ``spawn`` process; the parent owns the clock.

The child redirects its stdout/stderr file descriptors (native libraries included) to
``log.txt``, writes its current phase (``build``/``measure``) to the ``phase`` file, and writes
``result.json`` atomically (tmp + rename) when done. The parent polls, applies the build and the
measurement timeouts to their own phases, kills on timeout, and classifies the outcome from the
result, the exit code and the signal — a segfault, abort, hang or out-of-memory in a candidate
never takes the tuner down.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


RESULT = "result.json"
PHASE = "phase"
LOG = "log.txt"
JOB = "job.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildOutcome:
    """How a child ended.

    ``status``: ``ok`` (result written), ``build_failed`` (the build raised), ``crashed``
    (signal, non-zero exit, missing or unparsable result, error after the build), ``timed_out``.
    """

    status: str
    result: dict[str, Any] | None
    error: str
    exit_code: int | None
    phase: str
    phase_times: dict[str, float]


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class PhaseReporter:
    """Given to the child's target; ``phase("measure")`` starts the next timeout window."""

    def __init__(self, workdir: Path) -> None:
        self._path = workdir / PHASE

    def __call__(self, name: str) -> None:
        self._path.write_text(f"{name} {time.time()}\n", encoding="utf-8")


def _die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this child when the tuner dies (even by SIGKILL), so no orphaned
    candidate keeps running and writing into a study that is being resumed."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _child_main(target: str, workdir: str, parent_pid: int = 0) -> None:
    """Entry point of the spawned child (module-level so ``spawn`` can import it)."""
    if parent_pid:
        _die_with_parent(parent_pid)
    wd = Path(workdir)
    log_fd = os.open(wd / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    reporter = PhaseReporter(wd)
    reporter("start")
    job = json.loads((wd / JOB).read_text(encoding="utf-8"))
    module_name, _, fn_name = target.partition(":")
    current = {"phase": "start"}

    def phase(name: str) -> None:
        current["phase"] = name
        reporter(name)

    try:
        fn = getattr(importlib.import_module(module_name), fn_name)
        result = fn(job, wd, phase)
        result.setdefault("status", "ok")
    except Exception as exc:  # noqa: BLE001 - classified and recorded, never lost
        from gptuner_core.errors import GptunerError

        traceback.print_exc()
        message = str(exc) if isinstance(exc, GptunerError) else f"{type(exc).__name__}: {exc}"
        in_build = current["phase"] in ("start", "build")
        result = {"status": "build_failed" if in_build else "error", "error": message}
        # a backend may know better (e.g. trtexec's own classification of its child)
        state = getattr(getattr(exc, "outcome", None), "state", None)
        state = getattr(state, "value", state)
        if state in ("CRASHED", "TIMED_OUT", "ACCURACY_FAILED"):
            result["status"] = state.lower()
    sys.stdout.flush()
    sys.stderr.flush()
    write_json_atomic(wd / RESULT, result)
    os._exit(0)


def _read_phase(workdir: Path) -> str:
    try:
        return (workdir / PHASE).read_text(encoding="utf-8").split()[0]
    except (OSError, IndexError):
        return "start"


def run_isolated(
    target: str,
    job: dict[str, Any],
    workdir: Path,
    *,
    timeouts: dict[str, float],
    poll_s: float = 0.02,
    on_phase: Callable[[str], None] | None = None,
) -> ChildOutcome:
    """Run ``target(job, workdir, phase)`` ("module:function") in a fresh spawn process.

    Args:
        timeouts: seconds allowed per phase, e.g. ``{"build": 600, "measure": 300}``; the
            ``start`` phase (interpreter start-up, imports) shares the build timeout.
        on_phase: called in the parent whenever the child enters a new phase.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    for name in (RESULT, PHASE):
        with contextlib.suppress(FileNotFoundError):
            (workdir / name).unlink()
    write_json_atomic(workdir / JOB, job)
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_child_main, args=(target, str(workdir), os.getpid()), daemon=True)
    started = time.monotonic()
    proc.start()
    phase, phase_start = "start", started
    phase_times: dict[str, float] = {}
    timed_out = ""
    try:
        while proc.is_alive():
            proc.join(poll_s)
            now = time.monotonic()
            seen = _read_phase(workdir)
            if seen != phase:
                phase_times[phase] = now - phase_start
                phase, phase_start = seen, now
                if on_phase is not None:
                    on_phase(phase)
            limit = timeouts.get(phase, timeouts.get("build", 600.0))
            if proc.is_alive() and now - phase_start > limit:
                timed_out = f"{phase} phase exceeded its timeout of {limit:g} s"
                proc.kill()
                proc.join(5)
                break
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join(5)
    phase_times[phase] = time.monotonic() - phase_start
    code = proc.exitcode
    if timed_out:
        return ChildOutcome(
            status="timed_out", result=None, error=timed_out, exit_code=code,
            phase=phase, phase_times=phase_times,
        )
    result = None
    result_path = workdir / RESULT
    if result_path.exists():
        try:
            result = json.loads(result_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return ChildOutcome(
                status="crashed", result=None, error=f"unparsable result file ({exc})",
                exit_code=code, phase=phase, phase_times=phase_times,
            )
    if code is not None and code < 0:
        error = f"child killed by signal {-code} ({signal_name(-code)}) during {phase}"
        if -code == signal.SIGKILL:
            error += " (killed: out of memory?)"
        return ChildOutcome(
            status="crashed", result=result, error=error, exit_code=code,
            phase=phase, phase_times=phase_times,
        )
    if result is None:
        error = (
            f"missing result file (child exited with status {code} during {phase} "
            "before writing it)"
        )
        return ChildOutcome(
            status="crashed", result=None, error=error, exit_code=code,
            phase=phase, phase_times=phase_times,
        )
    status = result.get("status", "ok")
    if status == "error":
        status = "crashed"
    return ChildOutcome(
        status=status, result=result, error=result.get("error", ""), exit_code=code,
        phase=phase, phase_times=phase_times,
    )
