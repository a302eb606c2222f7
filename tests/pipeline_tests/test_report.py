"""``gptuner report``: one self-contained HTML file, opened in headless Chromium with the
network blocked; every figure must render."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from gptuner_core.cli import main


FIGURES = {"accuracy_latency", "speedups", "history", "knob_effects", "samples", "drift",
           "search_curve_builds", "search_curve_seconds"}


@pytest.fixture(scope="module")
def report(study: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert main(["report", str(study), "-o", str(out)]) == 0
    return out


def test_report_is_self_contained(report: Path, study: Path) -> None:
    from gptuner_core.storage import open_store

    text = report.read_text(encoding="utf-8")
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=['\"]?https?:", text)
    assert set(re.findall(r"data-key='([a-z_]+)'", text)) == FIGURES
    with open_store(study, readonly=True) as store:
        winner = store.winner()
        n = len(store.candidates())
    assert winner.verdict.value in text
    table = text[text.index("id=\"candidates\""):]
    assert table[: table.index("</table>")].count("<tr") == n + 1  # header + one row each
    assert "gptuner tune --config" in text


def test_missing_study_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "is not a study folder" in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="no Chromium at /usr/bin/chromium")
def test_every_figure_renders_offline_in_chromium(report: Path) -> None:
    from playwright.sync_api import sync_playwright

    from gptuner_core.testing.dashboard_server import CHROMIUM
    from gptuner_core.testing.dashboard_server import CHROMIUM_ARGS

    requests: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.route("**/*", lambda route: (requests.append(route.request.url), route.abort())
                       if not route.request.url.startswith("file:") else route.continue_())
            page.goto(report.as_uri())
            page.wait_for_function(
                "n => document.querySelectorAll('.gptuner-figure .js-plotly-plot .main-svg').length >= n",
                arg=len(FIGURES), timeout=60_000,
            )
            rendered = page.eval_on_selector_all(
                ".gptuner-figure", "els => els.filter(e => e.querySelector('.main-svg') && "
                "e.querySelector('.js-plotly-plot')._fullData !== undefined).map(e => e.dataset.key)",
            )
            assert "Verdict" in page.inner_text("body")
        finally:
            browser.close()
    assert set(rendered) == FIGURES
    assert errors == [] and requests == []
