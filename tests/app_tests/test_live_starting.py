"""Issue 39 item 11: a run starting (a Resume) showed the last run's message beside "starting"
("starting · candidate budget reached (8); winner …")."""

from __future__ import annotations

import subprocess
import sys

from gptuner_core.engine.files.workspace import StudyWorkspace
from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study
from tests.app_tests.conftest import open_page


def test_starting_shows_no_message_of_the_last_run(tmp_path, monkeypatch) -> None:
    study = write_synthetic_study(tmp_path / "resumed", n=8, write_logs=False)
    with open_store(study) as store:
        store.set_meta("status_message", "candidate budget reached (8)")
    # a live Python process standing for the tuner just launched (its pid file, as launch writes)
    tuner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        StudyWorkspace(study).pid_file.write_text(str(tuner.pid), encoding="utf-8")
        at = open_page(tmp_path, "resumed", "3_Live.py", monkeypatch)
        line = next(m.value for m in at.markdown if "status:" in m.value)
        assert "**starting**" in line and "budget reached" not in line, line
    finally:
        tuner.kill()
        tuner.wait()
