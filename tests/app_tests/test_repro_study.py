"""Issue 39 item 5: a Route trace repro study (``…-repro-N``), though the newest, is never the
study a page opens by default (it became every page's study after a Reproduce)."""

from __future__ import annotations

import os
import time

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from gptuner_core.testing.synthetic_study import write_synthetic_study
from tests.app_tests.conftest import APP


def test_a_repro_study_is_never_the_default(tmp_path, monkeypatch) -> None:
    write_synthetic_study(tmp_path / "digits", n=8, write_logs=False)
    time.sleep(1.1)
    write_synthetic_study(tmp_path / "digits-repro-3", n=2, write_logs=False)  # the newest
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(tmp_path))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    later = time.time() + 60  # the newest, whatever the first run read (a read moves the WAL)
    os.utime(tmp_path / "digits-repro-3" / "study.sqlite", (later, later))
    at.switch_page("app_pages/4_Results.py").run()
    assert not at.exception, at.exception
    assert at.session_state[state.STUDY] == "digits"
    assert at.sidebar.selectbox(key="_study_picker").value == "digits"
