"""End to end in real headless Chromium: launch a tuning run from the New run page on a bundled
sample, watch Live reach completion, check the results scatter and a route trace render.

Screenshots go to ``test-artifacts/``. Needs Debian's chromium at /usr/bin/chromium.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gptuner_core.testing.dashboard_server import CHROMIUM
from gptuner_core.testing.dashboard_server import CHROMIUM_ARGS
from gptuner_core.testing.dashboard_server import ROOT
from gptuner_core.testing.dashboard_server import dashboard_server
from gptuner_core.testing.dashboard_server import wait_idle as _idle


pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
]
ARTIFACTS = ROOT / "test-artifacts"
EXPRESSION = "-fp16:convert=[off|on]"


def _fill(page, label: str, value: str) -> None:
    box = page.get_by_role("textbox", name=label, exact=True)
    box.fill(value)
    box.press("Enter")
    _idle(page)


def _select(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    _idle(page)




def test_launch_watch_and_inspect(tmp_path: Path) -> None:
    from playwright.sync_api import expect
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=60_000)  # the first render of a page imports plotly/pandas
    ARTIFACTS.mkdir(exist_ok=True)
    ws = tmp_path / "workspace"
    ws.mkdir()
    with dashboard_server(ws, log=ARTIFACTS / "streamlit.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        try:
            page.goto(f"{url}/New_run")
            expect(page.get_by_role("heading", name="New tuning run")).to_be_visible()
            _select(page, "Sample model", "mlp_digits")
            box = page.get_by_role("textbox", name="Tunable expression (build it here or in the Knob explorer)")
            expect(box).to_be_visible()
            _idle(page)  # the sample's starter expression is in place: now edit it
            box.fill(EXPRESSION)
            box.press("Control+Enter")
            _idle(page)
            expect(box).to_have_value(EXPRESSION)
            page.get_by_text("Gate on ε (a study needs a gate or No gate)").first.click()  # then ε = 1e-3
            _idle(page)
            # a real run, kept short: 1 s per measurement (CLI default 10 s), 4 re-validation rounds
            page.get_by_text("Advanced: batch size").click()
            _fill(page, "max_time_s (default: 10)", "1")
            _fill(page, "Re-validation rounds", "4")
            expect(page.locator("code").filter(has_text=f'"expression": "{EXPRESSION}"').first).to_be_visible()
            expect(page.locator("code").filter(has_text='"epsilon": 0.001').first).to_be_visible()
            expect(page.locator("code").filter(has_text='"revalidate_rounds": 4').first).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "e2e-1-new-run.png"), full_page=True)
            page.get_by_role("button", name="Start tuning").click()

            # Live: the page switches by itself and polls until the tuner finishes
            expect(page.get_by_role("heading", name="Live")).to_be_visible()
            deadline = time.monotonic() + 480
            finished = page.get_by_text("status: finished")
            while not finished.is_visible():
                assert time.monotonic() < deadline, "tuning did not finish within 8 minutes"
                assert not page.get_by_text("status: failed").is_visible(), page.inner_text("body")
                page.wait_for_timeout(2000)
            page.screenshot(path=str(ARTIFACTS / "e2e-2-live.png"), full_page=True)
            studies = [d for d in ws.iterdir() if (d / "study.sqlite").is_file()]
            assert len(studies) == 1, studies
            study = studies[0].name

            # Results: the accuracy-vs-latency scatter renders with the eligible candidates
            page.goto(f"{url}/Results?study={study}")
            expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
            expect(page.locator(".legendtext").filter(has_text="eligible (").first).to_be_visible()
            expect(page.locator(".legendtext").filter(has_text="Pareto front").first).to_be_visible()
            expect(page.locator(".hline, .shapelayer path").first).to_be_attached()  # the ε line
            page.screenshot(path=str(ARTIFACTS / "e2e-3-results.png"), full_page=True)

            # Route trace of the default route: record table, latency histogram, repro command
            page.goto(f"{url}/Route_trace?study={study}")
            expect(page.get_by_role("heading", name="Requested vs effective route")).to_be_visible()
            expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
            expect(page.locator("code").filter(has_text="gptuner tune").first).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "e2e-4-route-trace.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "e2e-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
