"""In real headless Chromium: the Explain page and Compare's aligned layer diff on the bundled
H200 study with CUDA kernel profiles (examples/studies/torch_h200_profiles)."""

from __future__ import annotations

import os
import shutil
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
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}"),
]
ARTIFACTS = ROOT / "test-artifacts"
EXAMPLE = ROOT / "examples" / "studies" / "torch_h200_profiles"




def test_explain_and_the_layer_diff_render(tmp_path: Path) -> None:
    from playwright.sync_api import expect
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=60_000)
    ARTIFACTS.mkdir(exist_ok=True)
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws / "h200")
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-explain.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)
        try:
            page.goto(f"{url}/Explain?study=h200")
            expect(page.get_by_role("heading", name="Explain")).to_be_visible()
            _idle(page)
            expect(page.get_by_role("heading", name="Knobs changed")).to_be_visible()
            expect(page.get_by_role("heading", name="Failure triage")).to_be_visible()
            expect(page.locator('[data-testid="stPlotlyChart"] .main-svg').first).to_be_visible()
            assert not page.locator('[data-testid="stException"]').count()
            page.screenshot(path=str(ARTIFACTS / "e2e-explain.png"), full_page=True)

            page.goto(f"{url}/Compare?study=h200")
            _idle(page)
            expect(page.get_by_role("heading", name="Where the time goes: aligned layer diff")).to_be_visible()
            expect(page.get_by_text("triton_tem_fused_convolution").first).to_be_attached()
            assert not page.locator('[data-testid="stException"]').count()
            page.screenshot(path=str(ARTIFACTS / "e2e-compare-layer-diff.png"), full_page=True)
        finally:
            browser.close()
