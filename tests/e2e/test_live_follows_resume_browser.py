"""Live, open on a stopped study, follows it when it is resumed without the page: from a
terminal (``gptuner tune --study S --continue``), another tab, or a Resume whose rerun the
browser never got (the suite saw that on a busy machine: the tuner resumed and finished, the
page stayed on "stopped" for 300 s)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gptuner_core.testing.dashboard_server import CHROMIUM
from gptuner_core.testing.dashboard_server import dashboard_server
from gptuner_core.testing.dashboard_server import wait_idle
from tests.app_tests.live_study import launch_faulty
from tests.app_tests.live_study import status
from tests.app_tests.live_study import wait


pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}"),
]


def test_live_follows_a_study_resumed_without_the_page(tmp_path: Path, browser_page) -> None:
    from playwright.sync_api import expect

    from gptuner_core.dashboard import launch
    from gptuner_core.engine.process.launch import is_running

    ws = tmp_path / "ws"
    study = ws / "resumed-elsewhere"
    launch_faulty(tmp_path, study, "-fault:sleep_ms=200 -fault:label=[a|b] -ort:threads=[0|1]")
    launch.request_stop(study)
    assert wait(lambda: status(study)[0] == "stopped" and not is_running(study))
    assert status(study)[1] < 4
    page = browser_page
    with dashboard_server(ws, log=tmp_path / "streamlit.log") as url:
        page.goto(f"{url}/Live")
        wait_idle(page)
        expect(page.get_by_role("button", name="Resume")).to_be_visible()
        launch.resume(study)  # as `gptuner tune --study S --continue` in a terminal
        assert wait(lambda: status(study)[0] == "finished", 180), (study / "tuner.log").read_text()
        expect(page.get_by_role("link", name="See the results")).to_be_visible(timeout=60_000)
        expect(page.get_by_role("button", name="Resume")).to_have_count(0)
