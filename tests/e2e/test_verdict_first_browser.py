"""In real headless Chromium (issue 25): a study whose screening (#19 1.285x) and verdict (no
winner, the default kept) disagree shows the verdict first on Overview, Live, Results, Route trace,
Compare and Explain, and no page draws the default as "winner". Screenshots go to
test-artifacts/e2e-verdict-*.png."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gptuner_core.testing.dashboard_server import CHROMIUM
from gptuner_core.testing.dashboard_server import CHROMIUM_ARGS
from gptuner_core.testing.dashboard_server import ROOT
from gptuner_core.testing.dashboard_server import dashboard_server
from gptuner_core.testing.dashboard_server import wait_idle as _idle
from gptuner_core.testing.disagreeing_study import write_disagreeing_study


pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}"),
]
ARTIFACTS = ROOT / "test-artifacts"
PAGES = ("Live", "Results", "Route_trace", "Compare", "Explain")


def test_every_page_leads_with_the_verdict(tmp_path: Path) -> None:
    from playwright.sync_api import expect
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=60_000)
    ARTIFACTS.mkdir(exist_ok=True)
    ws = tmp_path / "ws"
    winner = write_disagreeing_study(ws / "disagree")
    headline = winner.headline()
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-verdict.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        try:
            page.goto(f"{url}/?study=disagree")
            _idle(page)
            expect(page.get_by_text(headline).first).to_be_attached()
            page.screenshot(path=str(ARTIFACTS / "e2e-verdict-overview.png"), full_page=True)
            for name in PAGES:
                page.goto(f"{url}/{name}?study=disagree")
                _idle(page)
                alert = page.locator('[data-testid="stAlert"]').first  # the first alert: the verdict
                expect(alert).to_contain_text(f"Verdict: {headline}")
                assert not page.locator('[data-testid="stException"]').count()
                body = page.locator("body").inner_text()
                assert "winner #0" not in body and "Screening best" not in body
                page.screenshot(path=str(ARTIFACTS / f"e2e-verdict-{name.lower()}.png"), full_page=True)
        finally:
            browser.close()
