"""The Live page's Stop and Resume buttons drive a real detached tuner."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gptuner_core.engine.process.launch import is_running
from gptuner_core.storage import open_store
from tests.app_tests.conftest import open_page
from tests.app_tests.live_study import launch_faulty
from tests.app_tests.live_study import status as _status
from tests.app_tests.live_study import wait as _wait


pytestmark = pytest.mark.slow


def _live(ws: Path, monkeypatch) -> AppTest:
    return open_page(ws, "live", "3_Live.py", monkeypatch, timeout=30)


def test_stop_then_resume(tmp_path, monkeypatch):
    """Stop ends the run cleanly after the candidate in flight; Resume finishes it, nothing lost."""
    ws = tmp_path / "ws"
    study = ws / "live"
    launch_faulty(tmp_path, study, "-fault:sleep_ms=300 -fault:label=[a|b] -ort:threads=[0|1] "
                  "-fault:mode=[none|build_error]")

    at = _live(ws, monkeypatch)
    stop = [b for b in at.button if b.key == "live_stop"]
    assert stop, "a running study shows a Stop button"
    stop[0].click().run()
    assert _wait(lambda: _status(study)[0] == "stopped" and not is_running(study))
    stopped_at = _status(study)[1]
    assert 0 < stopped_at < 8

    at = _live(ws, monkeypatch)
    resume = [b for b in at.button if b.key == "live_resume"]
    assert resume, "a stopped study shows a Resume button"
    shown = {m.label: m.value for m in at.metric}
    assert shown["Phase"] == "stopped" and shown["ETA"] == "—", shown  # never "done", "0s"
    resume[0].click().run()
    assert not at.exception, at.exception
    assert _wait(lambda: _status(study)[0] == "finished" and not is_running(study), 180)
    with open_store(study, readonly=True) as store:
        recs = store.candidates()
    assert len(recs) == 8
    assert len({r.requested_route for r in recs}) == 8
