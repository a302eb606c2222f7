"""Issue 26: a tuner the dashboard started is reaped when it ends (never left <defunct>)."""

from __future__ import annotations

import time
from pathlib import Path

from gptuner_core.engine.process.launch import launch_detached


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None  # gone: reaped


def test_finished_launch_is_reaped(tmp_path) -> None:
    pid = launch_detached(["--no-such-option"], tmp_path / "study")  # the CLI refuses at once
    deadline = time.monotonic() + 60
    while _state(pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # the reaper thread's wait() returns as the child exits
    assert _state(pid) is None, f"tuner {pid} left in state {_state(pid)}"
