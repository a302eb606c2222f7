"""Live, open on a stopped study, follows it when it is resumed without the page: from a
terminal (``gptuner tune --study S --continue``), another tab, or a Resume whose rerun the
browser never got (the suite saw that on a busy machine: the tuner resumed and finished, the
page stayed on "stopped" for 300 s)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from gptuner_core.testing.dashboard_server import CHROMIUM
from gptuner_core.testing.dashboard_server import dashboard_server
from gptuner_core.testing.dashboard_server import wait_idle


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine_tests.conftest import make_tiny_model  # noqa: E402


pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}"),
]
FAULTY = "gptuner_core.testing.faulty_backend:FaultyBackend"
QUICK = {"warmup_s": 0.01, "warmup_calls": 2, "min_samples": 10, "max_samples": 40, "max_time_s": 0.3}


def _status(study: Path) -> tuple[str | None, int]:
    from gptuner_core.storage import open_store

    try:
        with open_store(study, readonly=True) as store:
            return store.get_meta("status"), len(store.candidates())
    except Exception:  # noqa: BLE001 - not created yet
        return None, 0


def _wait(predicate, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def _stopped_study(tmp_path: Path, ws: Path) -> Path:
    import numpy as np

    from gptuner_core.config import StudyConfig
    from gptuner_core.dashboard import launch
    from gptuner_core.engine.process.launch import is_running

    study = ws / "resumed-elsewhere"
    model = make_tiny_model(tmp_path / "tiny.onnx")
    np.savez(tmp_path / "ds.npz", x=np.zeros((8, 16), np.float32))
    config = StudyConfig(
        model=str(model), backend=FAULTY, search="full",
        expression="-fault:sleep_ms=200 -fault:label=[a|b] -ort:threads=[0|1]",
        dataset=str(tmp_path / "ds.npz"), batch_size=4, epsilon=1e-3, revalidate_top_k=0,
        drift_every=0, measurement=dict(QUICK),
    )
    launch.launch(config, study)
    assert _wait(lambda: _status(study)[1] >= 1), (study / "tuner.log").read_text()
    launch.request_stop(study)
    assert _wait(lambda: _status(study)[0] == "stopped" and not is_running(study))
    assert _status(study)[1] < 4
    return study


def test_live_follows_a_study_resumed_without_the_page(tmp_path: Path, browser_page) -> None:
    from playwright.sync_api import expect

    from gptuner_core.dashboard import launch

    ws = tmp_path / "ws"
    study = _stopped_study(tmp_path, ws)
    page = browser_page
    with dashboard_server(ws, log=tmp_path / "streamlit.log") as url:
        page.goto(f"{url}/Live")
        wait_idle(page)
        expect(page.get_by_role("button", name="Resume")).to_be_visible()
        launch.resume(study)  # as `gptuner tune --study S --continue` in a terminal
        assert _wait(lambda: _status(study)[0] == "finished", 180), (study / "tuner.log").read_text()
        expect(page.get_by_role("link", name="See the results")).to_be_visible(timeout=60_000)
        expect(page.get_by_role("button", name="Resume")).to_have_count(0)
