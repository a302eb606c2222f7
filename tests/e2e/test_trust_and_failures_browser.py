"""In real headless Chromium: a launch that fails shows its cause on Overview and Live, and a
study copied from elsewhere that names code asks before Resume runs any of it."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from gptuner_core.testing.dashboard_server import CHROMIUM
from gptuner_core.testing.dashboard_server import ROOT
from gptuner_core.testing.dashboard_server import dashboard_server
from gptuner_core.testing.dashboard_server import wait_idle as _idle


pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}"),
]
ARTIFACTS = ROOT / "test-artifacts"


def test_a_failed_launch_shows_its_cause(tmp_path: Path, browser_page) -> None:
    """A real detached launch whose tuner exits at once: the model was a valid ONNX file when the
    launch checked it (a bad one is refused before anything is written, issue 24) and is
    overwritten right after, before the detached tuner reads it."""
    from playwright.sync_api import expect

    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.process.launch import is_running
    from gptuner_core.engine.process.launch import launch_config

    ws = tmp_path / "ws"
    ws.mkdir()
    bad = tmp_path / "broken.onnx"
    bad.write_bytes((ROOT / "assets" / "mlp_digits.onnx").read_bytes())
    data = ROOT / "assets" / "mlp_digits_eval.npz"
    launch_config(StudyConfig(model=str(bad), backend="onnxruntime", dataset=str(data), epsilon=1e-3,
                              expression="-quant:mode=[off|qdq]"), ws / "broken")
    bad.write_bytes(b"not an onnx model")
    deadline = time.monotonic() + 60
    while is_running(ws / "broken"):
        assert time.monotonic() < deadline, "the failing tuner did not exit"
        time.sleep(0.5)
    cause = (ws / "broken" / "tuner.log").read_text().strip().splitlines()[-1]
    assert "gptuner: error:" in cause, cause
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-failed-launch.log") as url:
        page.goto(url)
        _idle(page)
        alert = page.locator('[data-testid="stAlert"]').filter(has_text="failed to start").first
        expect(alert).to_be_visible()
        expect(alert).to_contain_text(cause.removeprefix("gptuner: error: ")[:60])
        page.screenshot(path=str(ARTIFACTS / "e2e-failed-launch-overview.png"), full_page=True)
        assert not page.locator('[data-testid="stException"]').count()


def test_resume_of_a_copied_study_asks_before_running_its_code(tmp_path: Path, browser_page) -> None:
    from playwright.sync_api import expect

    from gptuner_core.storage import open_store
    from gptuner_core.testing.synthetic_study import write_synthetic_study

    ws = tmp_path / "ws"
    marker = tmp_path / "evil-ran"
    study = write_synthetic_study(ws / "copied", 6, seed=3)
    (study / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef metric(outputs, labels):\n    return 1.0\n")
    with open_store(study) as store:
        cfg = dict(store.config())
        store.set_meta("status", "stopped")
    cfg["task_metric"] = "evil.py:metric"  # what a study copied from elsewhere may name
    with sqlite3.connect(study / "study.sqlite") as conn:
        conn.execute("UPDATE study SET config = ? WHERE id = 1", (json.dumps(cfg),))
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-trust.log") as url:
        page.goto(f"{url}/Live?study=copied")
        _idle(page)
        page.get_by_role("button", name="Resume").click()
        _idle(page)
        warning = page.locator('[data-testid="stAlert"]').filter(has_text="evil.py:metric").first
        expect(warning).to_be_visible()
        expect(warning).to_contain_text("imported and run")
        expect(page.get_by_role("button", name="I trust this code").first).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "e2e-trust-resume.png"), full_page=True)
        assert not marker.exists() and not (study / "tuner.pid").exists()
