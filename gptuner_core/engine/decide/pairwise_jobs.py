"""Background comparisons for the dashboard: start ``gptuner revalidate`` detached, read its state.

Compare never measures inside Streamlit: like New run (:mod:`gptuner_core.engine.process.launch`) it
checks the pair with the CLI's own checks, creates the run folder, and starts
``python -m gptuner_core revalidate STUDY A B --max-rounds N --run-dir DIR`` in its own session
(output in ``DIR/log.txt``, pid in ``DIR/pid``). The run writes ``DIR/state.json`` while it waits
for the device and measures, and stores its :class:`~gptuner_core.records.pairwise.Comparison`
with the study. :func:`latest_job` reads a run back; a run whose process is gone before it said
``done`` is ``failed``, with the last line of its log as the cause.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from gptuner_core.engine.decide.pairwise import FOLDER
from gptuner_core.engine.decide.pairwise import STATE
from gptuner_core.engine.decide.pairwise import check_pair
from gptuner_core.engine.decide.pairwise import run_dir
from gptuner_core.engine.decide.pairwise import write_progress
from gptuner_core.engine.process.processes import pid_alive
from gptuner_core.errors import ConfigError
from gptuner_core.records.pairwise import PairwiseProgress


LOG = "log.txt"
PID = "pid"


@dataclass(frozen=True, slots=True, kw_only=True)
class PairwiseJob:
    """A background comparison as a reader sees it: its folder, progress, whether it runs, the
    cause of a failure (its message, else the last line of its log) and the log's tail."""

    folder: Path
    progress: PairwiseProgress
    running: bool
    cause: str = ""
    log: str = ""

    @property
    def phase(self) -> str:
        return self.progress.phase


def revalidate_argv(study_dir: str | Path, a: int, b: int, max_rounds: int | None,
                    folder: Path, *, trusted: bool = False) -> list[str]:
    args = ["revalidate", str(study_dir), str(a), str(b), "--run-dir", str(folder)]
    if trusted:  # the user confirmed the code the study names (the page asks first)
        args.append("--trust-study-code")
    if max_rounds is not None:
        args += ["--max-rounds", str(max_rounds)]
    return [sys.executable, "-m", "gptuner_core", *args]


def command(study_dir: str | Path, a: int, b: int, max_rounds: int | None = None) -> str:
    """The equivalent shell command a user can paste."""
    import shlex

    extra = f" --max-rounds {max_rounds}" if max_rounds is not None else ""
    return f"gptuner revalidate {shlex.quote(str(study_dir))} {a} {b}{extra}"


def _pair_runs(study_dir: str | Path, a: int, b: int) -> list[Path]:
    root = Path(study_dir) / FOLDER
    if not root.is_dir():
        return []
    prefix = f"{a:05d}_{b:05d}-"
    return sorted((p for p in root.iterdir() if p.is_dir() and p.name.startswith(prefix)),
                  key=lambda p: int(p.name.removeprefix(prefix) or 0))


def _tail(path: Path, max_bytes: int = 8000) -> str:
    from gptuner_core.storage.paths import inside

    if not inside(path, path.parent):  # a link out of the study folder is never read
        return ""
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - max_bytes))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def read_job(folder: Path) -> PairwiseJob | None:
    """The run in ``folder`` (``None`` when it holds no state, or only links out of it)."""
    from gptuner_core.storage.paths import inside

    if not all(inside(folder / name, folder) for name in (STATE, PID)):
        return None
    try:
        progress = PairwiseProgress.from_json(json.loads((folder / STATE).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    try:
        pid = int((folder / PID).read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        pid = progress.pid
    log = _tail(folder / LOG)
    finished = progress.phase in ("done", "failed")
    running = not finished and pid_alive(pid)
    cause = progress.message if progress.phase == "failed" else ""
    if not finished and not running:
        last = next((ln.strip() for ln in reversed(log.splitlines()) if ln.strip()), "")
        cause = last or "the comparison ended without a result (its log is empty)"
        progress = PairwiseProgress(**{**progress.to_json(), "phase": "failed", "message": cause})
    elif progress.phase == "failed" and not cause:
        cause = next((ln.strip() for ln in reversed(log.splitlines()) if ln.strip()), "failed")
    return PairwiseJob(folder=folder, progress=progress, running=running, cause=cause, log=log)


def latest_job(study_dir: str | Path, a: int, b: int) -> PairwiseJob | None:
    """The newest background (or CLI) comparison of ``b`` against ``a``."""
    for folder in reversed(_pair_runs(study_dir, a, b)):
        job = read_job(folder)
        if job is not None:
            return job
    return None


def launch_pairwise(study_dir: str | Path, a: int, b: int, *, max_rounds: int | None = None,
                    trusted: bool = False) -> PairwiseJob:
    """Check the pair (one :class:`ConfigError` line), start the comparison detached, return it."""
    if max_rounds is not None and max_rounds < 2:
        msg = f"the round budget must be an integer >= 2 (got {max_rounds})"
        raise ConfigError(msg)
    check_pair(study_dir, a, b)
    running = latest_job(study_dir, a, b)
    if running is not None and running.running:
        msg = f"#{b} vs #{a} is already being compared (pid {running.progress.pid}); wait for it"
        raise ConfigError(msg)
    folder = run_dir(study_dir, a, b)
    write_progress(folder, PairwiseProgress(reference=a, candidate=b, phase="starting",
                                            max_rounds=max_rounds or 0))
    from gptuner_core.engine.process.launch import start_detached

    pid = start_detached(revalidate_argv(study_dir, a, b, max_rounds, folder, trusted=trusted),
                         folder / LOG)
    (folder / PID).write_text(str(pid), encoding="utf-8")
    return read_job(folder) or PairwiseJob(folder=folder, running=True, progress=PairwiseProgress(
        reference=a, candidate=b, phase="starting", max_rounds=max_rounds or 0, pid=pid))


def device_holders(study_dir: str | Path) -> tuple:
    """Live holders of the study's measuring device (a launch now would wait for them)."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.device_lock import busy
    from gptuner_core.engine.loop.sink import measuring_device
    from gptuner_core.errors import GptunerError
    from gptuner_core.storage import open_store

    try:
        with open_store(study_dir, readonly=True) as store:
            device = measuring_device(StudyConfig.from_json(store.config()))
    except GptunerError:  # a study this version cannot run: launching it says why
        return ()
    return () if device is None else busy(device)
