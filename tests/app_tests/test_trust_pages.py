"""Trust boundary on the pages: files shown stay in the study folder; opening a foreign study
runs none of its code; resuming one asks first, showing what would run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study
from tests.app_tests.conftest import APP


def _foreign_study(tmp_path: Path) -> tuple[Path, Path, Path]:
    ws = tmp_path / "ws"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-TOKEN")
    marker = tmp_path / "evil-ran"
    study = write_synthetic_study(ws / "copied", 6, seed=3)
    (study / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\ndef metric(outputs, labels):\n    return 1.0\n")
    with open_store(study) as store:
        store.put_candidate(CandidateRecord(number=6, requested_route="-x=1",
                                            state=CandidateState.CRASHED, error="boom",
                                            log_path=str(secret)))
        cfg = dict(store.config())
        store.set_meta("status", "stopped")
    cfg["task_metric"] = "evil.py:metric"  # what a study copied from elsewhere may name
    with sqlite3.connect(study / "study.sqlite") as conn:
        conn.execute("UPDATE study SET config = ? WHERE id = 1", (json.dumps(cfg),))
    return ws, secret, marker


def test_route_trace_refuses_a_log_outside_the_study(tmp_path, monkeypatch) -> None:
    """Defect: Route trace displayed any file the store's log_path named (a secret outside)."""
    ws, _, _ = _foreign_study(tmp_path)
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.STUDY] = "copied"
    at.session_state[state.CANDIDATE] = 6
    at.run()
    at.switch_page("app_pages/5_Route_trace.py").run()
    assert not at.exception, at.exception
    assert not any("TOP-SECRET-TOKEN" in c.value for c in at.code)
    assert any("outside the study folder" in e.value for e in at.error)


def test_opening_every_page_runs_no_study_code(tmp_path, monkeypatch) -> None:
    """Opening a study (every page) never imports the code its configuration names."""
    ws, _, marker = _foreign_study(tmp_path)
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.STUDY] = "copied"
    at.run()
    for page in sorted((APP.parent / "app_pages").glob("*.py")):
        at.switch_page(str(page.relative_to(APP.parent))).run()
        assert not at.exception, (page.name, at.exception)
    assert not marker.exists()


def test_resume_of_foreign_code_asks_first(tmp_path, monkeypatch) -> None:
    """Defect: Resume on a copied study whose config names '<study>/evil.py:metric' ran it.
    Now Resume shows what would run and needs an explicit confirmation."""
    ws, _, marker = _foreign_study(tmp_path)
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.STUDY] = "copied"
    at.run()
    at.switch_page("app_pages/3_Live.py").run()
    assert not at.exception, at.exception
    at.button(key="live_resume").click().run()
    assert not at.exception, at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "evil.py:metric" in warnings and "imported and run" in warnings
    assert not (ws / "copied" / "tuner.pid").exists() and not marker.exists()
    assert any(b.key == "live_resume_confirm" for b in at.button)
