"""Results offers the study's HTML report (the file ``gptuner report`` writes) as a download."""

from __future__ import annotations

from tests.app_tests.conftest import open_page


def test_results_offers_the_html_report(finished_workspace, monkeypatch) -> None:
    from gptuner_core.dashboard.widgets import report_html
    from gptuner_core.report import write_report

    at = open_page(finished_workspace, "digits-study", "4_Results.py", monkeypatch)
    buttons = [b for b in at.get("download_button") if b.proto.label == "Download report (HTML)"]
    assert len(buttons) == 1, [b.proto.label for b in at.get("download_button")]
    assert buttons[0].proto.deferred_file_id  # built when pressed, not on every render
    study = finished_workspace / "digits-study"
    page = report_html(study)
    cli = write_report(study, finished_workspace.parent / "cli-report.html").read_text()
    assert page == cli  # the same file as `gptuner report STUDY -o FILE`
    assert "id='verdict'" in page and "table_id" not in page and 'id="candidates"' in page
