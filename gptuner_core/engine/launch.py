"""Start a tuner as a detached background process; request a stop; tell whether it runs.

The dashboard never tunes inside Streamlit: it starts ``python -m gptuner_core tune …`` in its
own session (it survives browser reloads and app restarts) and reads the study store.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from gptuner_core.errors import ConfigError


def tune_argv(args: list[str]) -> list[str]:
    """The full argv for ``gptuner tune ARGS`` with this interpreter."""
    return [sys.executable, "-m", "gptuner_core", "tune", *args]


def cli_command(args: list[str]) -> str:
    """The equivalent shell command a user can paste."""
    return "gptuner tune " + " ".join(shlex.quote(a) for a in args)


def launch_detached(args: list[str], study_dir: str | Path) -> int:
    """Start ``gptuner tune ARGS`` detached; its output goes to ``STUDY/tuner.log``."""
    study = Path(study_dir)
    study.mkdir(parents=True, exist_ok=True)
    if is_running(study):
        msg = f"a tuner is already running on '{study}' (pid {read_pid(study)})"
        raise ConfigError(msg)
    log = (study / "tuner.log").open("ab")
    proc = subprocess.Popen(  # noqa: S603 - argv list, never a shell string
        tune_argv(args),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        close_fds=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    log.close()
    (study / "tuner.pid").write_text(str(proc.pid), encoding="utf-8")
    return proc.pid


def read_pid(study_dir: str | Path) -> int | None:
    try:
        return int((Path(study_dir) / "tuner.pid").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return None


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of this process counts as ended
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def is_running(study_dir: str | Path) -> bool:
    return pid_alive(read_pid(study_dir))


def request_stop(study_dir: str | Path) -> None:
    """Ask the tuner to stop after the current candidate (it finishes cleanly)."""
    study = Path(study_dir)
    if not study.exists():
        msg = f"no study folder '{study}'"
        raise ConfigError(msg)
    (study / "stop").write_text("stop requested\n", encoding="utf-8")
