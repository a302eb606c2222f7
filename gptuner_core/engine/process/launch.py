"""Start a tuner as a detached background process; request a stop; tell whether it runs.

The dashboard never tunes inside Streamlit: it writes the study's ``study.json`` and starts
``python -m gptuner_core tune --config STUDY/study.json --study STUDY`` in its own session (it
survives browser reloads and app restarts), then reads the study store.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.engine.process.processes import pid_alive
from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from gptuner_core.config import StudyConfig


def tune_argv(args: list[str]) -> list[str]:
    """The full argv for ``gptuner tune ARGS`` with this interpreter."""
    return [sys.executable, "-m", "gptuner_core", "tune", *args]


def cli_command(args: list[str]) -> str:
    """The equivalent shell command a user can paste."""
    return "gptuner tune " + " ".join(shlex.quote(a) for a in args)


def config_argv(study_dir: str | Path, *, resume: bool = False) -> list[str]:
    """``gptuner tune`` arguments for a study whose settings are in ``STUDY/study.json``."""
    from gptuner_core.engine.files.workspace import StudyWorkspace

    ws = StudyWorkspace(study_dir)
    if resume:
        return ["--study", str(ws.root), "--continue"]
    return ["--config", str(ws.config), "--study", str(ws.root)]


def launch_config(config: StudyConfig, study_dir: str | Path) -> int:
    """Validate ``config`` (the CLI's own validation), write it as ``STUDY/study.json`` and start
    the tuner detached; return its pid."""
    from gptuner_core.config import StudyConfig as _Config
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.engine.loop.tuner import Tuner

    _Config.from_json(config.to_json())  # the same checks `gptuner tune --config` applies
    ws = StudyWorkspace(study_dir)
    Tuner(config, ws.root).check_new()  # the tuner's whole plan, before study.json is written
    ws.write_config(config.to_json())
    return launch_detached(config_argv(ws.root), ws.root)


def launch_detached(args: list[str], study_dir: str | Path) -> int:
    """Start ``gptuner tune ARGS`` detached; its output goes to ``STUDY/tuner.log``."""
    from gptuner_core.engine.files.workspace import StudyWorkspace

    ws = StudyWorkspace(study_dir)
    ws.root.mkdir(parents=True, exist_ok=True)
    if is_running(ws.root):
        msg = f"a tuner is already running on '{ws.root}' (pid {read_pid(ws.root)})"
        raise ConfigError(msg)
    ws.clear_stop()
    pid = start_detached(tune_argv(args), ws.log)
    ws.pid_file.write_text(str(pid), encoding="utf-8")
    return pid


def start_detached(argv: list[str], log: Path) -> int:
    """Start ``argv`` in its own session, its output appended to ``log``; return its pid.

    The starter (the dashboard's server) is the child's parent: a thread waits for it, so a
    finished child is reaped at once instead of staying <defunct> until the server exits (a
    tuner, and a background comparison, issue 39 item 16)."""
    with log.open("ab") as out:
        proc = subprocess.Popen(  # noqa: S603 - argv list, never a shell string
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()
    return proc.pid


def read_pid(study_dir: str | Path) -> int | None:
    """The pid of the study's tuner: the launcher's pid file, else the store's ``pid`` meta
    while the store says a tuner is active (a finished study's pid means nothing)."""
    from gptuner_core.engine.files.workspace import StudyWorkspace

    ws = StudyWorkspace(study_dir)
    try:
        return int(ws.pid_file.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        pass
    if not ws.has_study():
        return None
    from gptuner_core.errors import StoreError
    from gptuner_core.storage import open_store

    try:
        with open_store(ws.root, readonly=True) as store:
            pid = store.get_meta("pid")
            status = store.status()
    except StoreError:
        return None
    active = status is not None and status.is_active()
    return int(pid) if isinstance(pid, int) and active else None


def is_running(study_dir: str | Path) -> bool:
    """A live process that is this study's tuner (a recycled pid of another program is not)."""
    pid = read_pid(study_dir)
    if not pid_alive(pid):
        return False
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return True
    return "gptuner" in cmdline or "pytest" in cmdline or "python" in cmdline


def request_stop(study_dir: str | Path) -> None:
    """Ask the running tuner to stop after the current candidate (it finishes cleanly)."""
    from gptuner_core.engine.files.workspace import StudyWorkspace

    ws = StudyWorkspace(study_dir)
    if not ws.root.is_dir():
        msg = f"no study folder '{ws.root}' (expected the folder of a running study)"
        raise ConfigError(msg)
    if not is_running(ws.root):
        msg = f"no tuner is running on '{ws.root}': nothing to stop (a stop request is only for a running study)"
        raise ConfigError(msg)
    ws.request_stop()
