"""Run one candidate in a fresh process; the parent owns the clock.

The child is forked from the pre-imported ``launcher`` when the job allows it, else started with
``spawn`` (a new interpreter): see :func:`start_method_for`. Either way it is a fresh process no
other candidate has run in. The child redirects its stdout/stderr file descriptors (native
libraries included) to ``log.txt``, appends each phase it enters (``build``/``measure``, with its
own clock, so ``phase_times`` are exact rather than rounded to the parent's poll) to the ``phase``
file, and writes ``result.json`` atomically (tmp + rename) when done. The parent polls, applies the
build and the measurement timeouts to their own phases, kills on timeout, and classifies the
outcome from the result, the exit code and the signal — a segfault, abort, hang or out-of-memory
in a candidate never takes the tuner down.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import multiprocessing
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import Any

from gptuner_core.engine.process.deaths import MAX_ATTEMPTS
from gptuner_core.engine.process.deaths import infrastructure_death
from gptuner_core.engine.process.deaths import oom_kills
from gptuner_core.engine.process.deaths import oom_note
from gptuner_core.engine.process.start_method import FORK_SAFE_BACKENDS  # noqa: F401 - re-exported
from gptuner_core.engine.process.start_method import START_METHOD_ENV  # noqa: F401 - re-exported
from gptuner_core.engine.process.start_method import START_METHODS  # noqa: F401 - re-exported
from gptuner_core.engine.process.start_method import launcher_kind
from gptuner_core.engine.process.start_method import needs_clean_interpreter  # noqa: F401 - re-exported
from gptuner_core.engine.process.start_method import prestart  # noqa: F401 - re-exported
from gptuner_core.engine.process.start_method import start_method_for
from gptuner_core.engine.process.start_method import warm_models


RESULT = "result.json"
PHASE = "phase"
LOG = "log.txt"
JOB = "job.json"
_log = logging.getLogger(__name__)
_warned: set[str] = set()


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
    attempts: int = 1  # processes it took: more than one when the machinery killed one (``deaths``)


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def write_json_atomic(path: Path, data: Any, *, durable: bool = True) -> None:
    """Write ``path`` so that a reader sees the old file or the whole new one, never a part;
    ``durable`` also survives a power loss (fsync, milliseconds on a busy disk)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.flush()
        if durable:
            os.fsync(fh.fileno())
    os.replace(tmp, path)


class PhaseReporter:
    """Given to the child's target; ``phase("measure")`` starts the next timeout window."""

    def __init__(self, workdir: Path) -> None:
        self._path = workdir / PHASE

    def __call__(self, name: str) -> None:
        with self._path.open("a", encoding="utf-8") as fh:
            fh.write(f"{name} {time.time()}\n")


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


PYCACHE_ENV = "GPTUNER_PYCACHE"


def _bytecode_cache() -> None:
    """Let this fresh child cache the bytecode of its imports under gptuner's cache folder
    (``~/.cache/gptuner/pycache``, never beside the sources) where the interpreter was told to
    write none (``PYTHONDONTWRITEBYTECODE``, ``-B``: common in container images). Otherwise
    every measuring process compiles its imports from source again: torch and Inductor took
    16.8 s to import that way on the lent H200's image, 4.4 s from a cache.
    ``GPTUNER_PYCACHE=off`` keeps the interpreter's setting."""
    if not sys.flags.dont_write_bytecode or sys.pycache_prefix or os.environ.get(PYCACHE_ENV) == "off":
        return
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    prefix = Path(base) / "gptuner" / "pycache"
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError:
        return
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False


def _child_main(target: str, workdir: str, parent_pid: int = 0) -> None:
    """Entry point of the child, spawned or forked by the launcher (``parent_pid``: the process
    it must die with)."""
    if parent_pid:
        _die_with_parent(parent_pid)
    _bytecode_cache()
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


def _read_phases(workdir: Path) -> list[tuple[str, float]]:
    """The phases the child reported, each with the child's wall clock when it entered it."""
    try:
        text = (workdir / PHASE).read_text(encoding="utf-8")
    except OSError:
        return []
    marks = []
    for line in text.split("\n")[:-1]:  # a last line without newline is still being written
        name, _, stamp = line.partition(" ")
        with contextlib.suppress(ValueError):
            marks.append((name, float(stamp)))
    return marks


def last_phase(workdir: Path) -> str:
    """The phase the child in ``workdir`` is in now, as far as it reported (``""``: none yet)."""
    marks = _read_phases(workdir)
    return marks[-1][0] if marks else ""


def _phase_times(marks: list[tuple[str, float]], started: float, ended: float) -> dict[str, float]:
    """Seconds per phase from the child's marks; ``start`` runs from the request to the first
    other phase (process start-up, imports, loading the backend)."""
    timeline = [("start", started), *((n, t) for n, t in marks if n != "start")]
    times: dict[str, float] = {}
    for i, (name, t) in enumerate(timeline):
        end = timeline[i + 1][1] if i + 1 < len(timeline) else ended
        times[name] = times.get(name, 0.0) + max(end - t, 0.0)
    return times


def _warn_once(reason: str) -> None:
    if reason not in _warned:
        _warned.add(reason)
        _log.warning("candidate processes use spawn: %s", reason)


def _start_launched(target: str, workdir: Path, job: dict[str, Any]) -> Any:
    """A child forked by the job's launcher (restarted once if it died), or ``None`` to spawn."""
    from gptuner_core.engine.process import launcher

    reason, kind = "", launcher_kind(job) or "cpu"
    for _ in range(2):
        current = None
        try:
            current = launcher.shared(kind)
            return current.launch(
                f"{__name__}:_child_main", [target, str(workdir)], log=str(workdir / LOG),
                warm=warm_models(job),
            )
        except (launcher.LauncherUnavailable, OSError) as exc:
            reason = str(exc)
            if current is None or current.alive():
                break
    _warn_once(reason)
    return None


def _start(target: str, workdir: Path, method: str, job: dict[str, Any]) -> Any:
    launch = method == "launcher" and sys.platform.startswith("linux")
    proc = _start_launched(target, workdir, job) if launch else None
    if proc is None:
        ctx = multiprocessing.get_context("spawn")
        proc = ctx.Process(target=_child_main, args=(target, str(workdir), os.getpid()), daemon=True)
        proc.start()
    return proc


def run_isolated(
    target: str,
    job: dict[str, Any],
    workdir: Path,
    *,
    timeouts: dict[str, float],
    poll_s: float = 0.02,
    on_phase: Callable[[str], None] | None = None,
    start_method: str | None = None,
) -> ChildOutcome:
    """Run ``target(job, workdir, phase)`` ("module:function") in a fresh process; run it again
    (at most ``deaths.MAX_ATTEMPTS`` in all) when the machinery, not the route, ended it: the
    launcher died, or someone outside killed the child (``deaths``).

    Args:
        timeouts: seconds allowed per phase, e.g. ``{"build": 600, "measure": 300}``; the
            ``start`` phase (process start-up, imports) shares the build timeout.
        on_phase: called in the parent whenever the child enters a new phase.
        start_method: ``auto``, ``launcher`` or ``spawn`` (see :func:`start_method_for`); the
            launcher falls back to spawn whenever it cannot fork a clean child.
    """
    method = start_method_for(job, start_method)
    workdir.mkdir(parents=True, exist_ok=True)
    # read by the child at once and rewritten if the candidate re-runs: no fsync needed (~12 ms)
    write_json_atomic(workdir / JOB, job, durable=False)
    attempt = 1
    while True:
        oom_before = oom_kills()
        outcome, lost = _run_once(target, job, workdir, method, timeouts, poll_s, on_phase, oom_before)
        outcome = replace(outcome, attempts=attempt)
        why = infrastructure_death(outcome.exit_code, lost, oom_before) if outcome.status == "crashed" else ""
        if not why:
            return outcome
        if attempt >= MAX_ATTEMPTS:  # killed each time: as the out-of-memory killer would
            each = f" in each of {attempt} attempts" if not lost else f" ({attempt} attempts)"
            return replace(outcome, error=_signal_error(outcome.exit_code, outcome.phase, oom_before, each)
                           if not lost else outcome.error + each)
        attempt += 1
        if lost and attempt == MAX_ATTEMPTS:  # the launcher died twice: no launcher this time
            method = "spawn"
        _log.warning("candidate process in %s: %s during %s; running it again (attempt %d of %d)",
                     workdir.name, why, outcome.phase, attempt, MAX_ATTEMPTS)
        with contextlib.suppress(OSError), (workdir / LOG).open("a", encoding="utf-8") as log:
            log.write(f"\n[gptuner tuner] {why} during {outcome.phase}: not the route's doing; "
                      f"running it again (attempt {attempt} of {MAX_ATTEMPTS})\n")


def _signal_error(code: int | None, phase: str, oom_before: int | None, each: str = "") -> str:
    signum = -(code or 0)
    return f"child killed by signal {signum} ({signal_name(signum)}) during {phase}{each}{oom_note(code, oom_before)}"


def _run_once(
    target: str, job: dict[str, Any], workdir: Path, method: str, timeouts: dict[str, float],
    poll_s: float, on_phase: Callable[[str], None] | None, oom_before: int | None,
) -> tuple[ChildOutcome, str]:
    """One process of the candidate and how it ended; with why its exit status is unknown
    (the launcher died: ``""`` otherwise)."""
    for name in (RESULT, PHASE):
        with contextlib.suppress(FileNotFoundError):
            (workdir / name).unlink()
    requested = time.time()
    proc = _start(target, workdir, method, job)
    started = time.monotonic()
    phase, phase_start = "start", started
    timed_out = ""
    try:
        while proc.is_alive():
            proc.join(poll_s)
            now = time.monotonic()
            seen = last_phase(workdir) or "start"
            if seen != phase:
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
        code, lost = proc.exitcode, getattr(proc, "lost", "")
        with contextlib.suppress(ValueError):  # a spawned child that outlived its kill stays open
            proc.close()
    phase_times = _phase_times(_read_phases(workdir), requested, time.time())
    if timed_out:
        return ChildOutcome(
            status="timed_out", result=None, error=timed_out, exit_code=code,
            phase=phase, phase_times=phase_times,
        ), ""
    result = None
    result_path = workdir / RESULT
    if result_path.exists():
        try:
            result = json.loads(result_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            return ChildOutcome(
                status="crashed", result=None, error=f"unparsable result file ({exc})",
                exit_code=code, phase=phase, phase_times=phase_times,
            ), lost
    if lost and result is None:
        return ChildOutcome(
            status="crashed", result=result, error=f"{lost} during {phase}", exit_code=code,
            phase=phase, phase_times=phase_times,
        ), lost
    if code is not None and code < 0 and not lost:  # (lost with a result: the child had finished)
        return ChildOutcome(
            status="crashed", result=result, error=_signal_error(code, phase, oom_before), exit_code=code,
            phase=phase, phase_times=phase_times,
        ), ""
    if result is None:
        error = (
            f"missing result file (child exited with status {code} during {phase} "
            "before writing it)"
        )
        return ChildOutcome(
            status="crashed", result=None, error=error, exit_code=code,
            phase=phase, phase_times=phase_times,
        ), ""
    status = result.get("status", "ok")
    if status == "error":
        status = "crashed"
    return ChildOutcome(
        status=status, result=result, error=result.get("error", ""), exit_code=code,
        phase=phase, phase_times=phase_times,
    ), ""
