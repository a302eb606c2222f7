"""Results offers the study's HTML report (the file ``gptuner report`` writes) as a download."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from tests.app_tests.conftest import APP


def test_results_offers_the_html_report(finished_workspace, monkeypatch) -> None:
    from gptuner_core.dashboard.widgets import report_html
    from gptuner_core.report import write_report

    monkeypatch.setenv("GPTUNER_WORKSPACE", str(finished_workspace))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.STUDY] = "digits-study"
    at.run()
    at.switch_page("app_pages/4_Results.py").run()
    assert not at.exception, at.exception
    buttons = [b for b in at.get("download_button") if b.proto.label == "Download report (HTML)"]
    assert len(buttons) == 1, [b.proto.label for b in at.get("download_button")]
    assert buttons[0].proto.deferred_file_id  # built when pressed, not on every render
    study = finished_workspace / "digits-study"
    page = report_html(study)
    cli = write_report(study, finished_workspace.parent / "cli-report.html").read_text()
    assert page == cli  # the same file as `gptuner report STUDY -o FILE`
    assert "id='verdict'" in page and "table_id" not in page and 'id="candidates"' in page
