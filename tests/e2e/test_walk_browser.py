"""Issue 26's walk in real headless Chromium: explorer → New run (fill every field) → explorer →
New run (all kept) → bad upload → reload → good upload (all kept) → Start → Live → Stop → Resume →
Results → Route trace repro (runs as printed) → Compare. Screenshots in ``test-artifacts/``."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
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
EXPRESSION = "-quant:mode=[off|qdq|dynamic] -quant:reduce_range=[off|on]"
#: every text field the walk fills, by label, with the value it must keep; 3 candidates of the 6
#: routes: enough to stop and resume a study, and the study runs twice (Start, then the route
#: trace's command line), so each candidate costs the walk two builds and measurements
TYPED = {"ε (route fails if loss ≥ ε)": "0.05", "Max candidates (blank = no limit)": "3",
         "Seed": "7", "Re-validate top k": "0", "max_time_s (default: 10)": "0.3",
         "Study name": "walk"}


def _go(page, name: str) -> None:
    """In-app navigation from the sidebar (the same session, as a user clicks)."""
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=name).first.click()
    _idle(page)


def _box(page, label: str):
    return page.get_by_role("textbox", name=label, exact=True)


def _no_traceback(page) -> None:
    from playwright.sync_api import expect

    expect(page.locator('[data-testid="stException"]')).to_have_count(0)


def _kept(page) -> None:
    from playwright.sync_api import expect

    if not _box(page, "Seed").is_visible():  # the expander: opened, never toggled shut
        page.get_by_text("Advanced: batch size").click()
        _idle(page)
    for label, value in TYPED.items():
        expect(_box(page, label)).to_have_value(value)
    expect(page.get_by_role("textbox", name="Tunable expression (build it here or in the Knob "
                                            "explorer)")).to_have_value(EXPRESSION)
    expect(page.get_by_role("combobox", name="Sample model")).to_have_value("mlp_digits")
    expect(page.get_by_role("checkbox", name="Gate on ε (a study needs a gate or No gate)")) \
        .to_be_checked()


def _upload(page, path: Path) -> None:
    page.locator('[data-testid="stFileUploader"]').filter(has_text="Dataset / reference inputs") \
        .locator('input[type="file"]').set_input_files(str(path))
    _idle(page)


def test_walk_keeps_everything_and_tells_the_truth(tmp_path: Path, browser_page) -> None:
    from playwright.sync_api import expect

    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    ws = tmp_path / "workspace"
    ws.mkdir()
    (tmp_path / "empty.npz").write_bytes(b"")
    shot = ARTIFACTS / "e2e-walk"
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-walk.log") as url:
        try:
            page.goto(f"{url}/Overview")  # reachable by its name, not "Page not found"
            expect(page.get_by_role("heading", name="gptuner — studies")).to_be_visible()
            _go(page, "Knob explorer")
            _go(page, "New run")
            page.get_by_role("combobox", name="Sample model").click()
            page.get_by_role("option", name="mlp_digits", exact=True).click()
            _idle(page)
            expr = page.get_by_role("textbox", name="Tunable expression (build it here or in "
                                                    "the Knob explorer)")
            expr.fill(EXPRESSION)
            expr.press("Control+Enter")
            _idle(page)
            page.get_by_text("Gate on ε (a study needs a gate or No gate)").first.click()
            _idle(page)
            page.get_by_text("Advanced: batch size").click()
            _idle(page)
            for label, value in TYPED.items():
                _box(page, label).fill(value)
                _box(page, label).press("Enter")
                _idle(page)
            page.screenshot(path=f"{shot}-1-filled.png", full_page=True)
            _go(page, "Knob explorer")
            _go(page, "New run")
            _kept(page)
            # a bad upload: one line naming the problem, the rest of the form as it was
            _upload(page, tmp_path / "empty.npz")
            expect(page.get_by_text("upload 'empty.npz' is empty (0 bytes)").first).to_be_visible()
            _no_traceback(page)
            page.screenshot(path=f"{shot}-2-bad-upload.png", full_page=True)
            _kept(page)
            page.reload()  # the same tab: what was typed comes back
            _idle(page)
            _kept(page)
            _upload(page, ROOT / "assets" / "mlp_digits_eval.npz")
            _kept(page)
            preview = page.locator("code").filter(has_text="gptuner tune --config").first
            expect(preview).to_contain_text(f"{ws}/walk-")
            previewed = preview.inner_text().split("--study ")[-1].strip()
            page.screenshot(path=f"{shot}-3-good-upload.png", full_page=True)
            page.get_by_role("button", name="Start tuning").click()

            expect(page.get_by_role("heading", name="Live")).to_be_visible()
            assert (Path(previewed) / "study.json").is_file(), (previewed, list(ws.iterdir()))
            page.get_by_role("button", name="Stop").click()
            resume = page.get_by_role("button", name="Resume")
            expect(resume).to_be_visible(timeout=180_000)
            page.screenshot(path=f"{shot}-4-stopped.png", full_page=True)
            resume.click()
            expect(page.get_by_role("link", name="See the results")).to_be_visible(timeout=300_000)
            _no_traceback(page)
            page.screenshot(path=f"{shot}-5-finished.png", full_page=True)

            _go(page, "Results")
            expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
            _no_traceback(page)
            page.screenshot(path=f"{shot}-6-results.png", full_page=True)
            _go(page, "Route trace")
            code = page.locator("code").filter(has_text="gptuner tune").first
            expect(code).to_be_visible()
            argv = shlex.split(code.inner_text())
            assert argv[:2] == ["gptuner", "tune"] and "--epsilon" in argv, argv
            page.screenshot(path=f"{shot}-7-route-trace.png", full_page=True)
            run = subprocess.run([sys.executable, "-m", "gptuner_core", *argv[1:], "--quiet"],  # noqa: S603
                                 capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
            assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
            _go(page, "Compare")
            expect(page.get_by_role("heading", name="Compare")).to_be_visible()
            _no_traceback(page)
            page.screenshot(path=f"{shot}-8-compare.png", full_page=True)
        except Exception:
            page.screenshot(path=f"{shot}-failure.png", full_page=True)
            raise
