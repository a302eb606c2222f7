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


def test_a_finished_background_comparison_is_reaped(tmp_path) -> None:
    """Issue 39 item 16: a comparison Compare started stayed <defunct> under the server."""
    import json
    import sqlite3

    from gptuner_core.engine.decide.pairwise_jobs import launch_pairwise
    from gptuner_core.testing.dashboard_server import ROOT
    from gptuner_core.testing.synthetic_study import write_synthetic_study

    study = write_synthetic_study(tmp_path / "s", n=12, write_logs=False)
    with sqlite3.connect(study / "study.sqlite") as conn:  # a config the CLI accepts
        config = json.loads(conn.execute("SELECT config FROM study").fetchone()[0])
        config.pop("synthetic")
        config["model"] = str(ROOT / config["model"])
        conn.execute("UPDATE study SET config = ?", (json.dumps(config),))
    from gptuner_core.storage import open_store

    with open_store(study, readonly=True) as store:
        other = next(r.number for r in store.candidates() if r.number and r.eligible)
    job = launch_pairwise(study, 0, other, max_rounds=2, trusted=True)
    from gptuner_core.engine.decide.pairwise_jobs import PID

    pid = int((job.folder / PID).read_text(encoding="utf-8"))  # the process the server started
    deadline = time.monotonic() + 120
    while _state(pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    assert _state(pid) is None, f"comparison {pid} left in state {_state(pid)}"
