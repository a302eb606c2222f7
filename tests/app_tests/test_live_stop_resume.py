"""The Live page's Stop and Resume buttons drive a real detached tuner."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gptuner_core.config import StudyConfig
from gptuner_core.dashboard import launch
from gptuner_core.engine.process.launch import is_running
from gptuner_core.storage import open_store
from tests.app_tests.conftest import open_page


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine_tests.conftest import make_tiny_model  # noqa: E402


pytestmark = pytest.mark.slow
FAULTY = "gptuner_core.testing.faulty_backend:FaultyBackend"
QUICK = {"warmup_s": 0.01, "warmup_calls": 2, "min_samples": 10, "max_samples": 40, "max_time_s": 0.3}


def _wait(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.3)
    return False


def _status(study: Path):
    try:
        with open_store(study, readonly=True) as store:
            return store.get_meta("status"), len(store.candidates())
    except Exception:  # noqa: BLE001 - not created yet
        return None, 0


def _live(ws: Path, monkeypatch) -> AppTest:
    return open_page(ws, "live", "3_Live.py", monkeypatch, timeout=30)


def test_stop_then_resume(tmp_path, monkeypatch):
    """Stop ends the run cleanly after the candidate in flight; Resume finishes it, nothing lost."""
    import numpy as np

    ws = tmp_path / "ws"
    study = ws / "live"
    model = make_tiny_model(tmp_path / "tiny.onnx")
    np.savez(tmp_path / "ds.npz", x=np.zeros((8, 16), np.float32))
    config = StudyConfig(
        model=str(model), backend=FAULTY, search="full",
        expression="-fault:sleep_ms=300 -fault:label=[a|b] -ort:threads=[0|1] -fault:mode=[none|build_error]",
        dataset=str(tmp_path / "ds.npz"), batch_size=4, epsilon=1e-3, revalidate_top_k=0,
        drift_every=0, measurement=dict(QUICK),
    )
    launch.launch(config, study)
    assert _wait(lambda: _status(study)[1] >= 1), (study / "tuner.log").read_text()

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
