"""End to end in real headless Chromium: the bundled torch sample, launched from New run and
watched to completion on Live (real torch.compile on the CPU, real processes, real SQLite).

Kept as small as a real run can be: one route (the default; the expression's second route is
cut by "Max candidates" = 1), compiled in the candidate's own process (``compile_threads=1``, the
fastest choice on 2 cores), no re-validation rounds and short measurement windows. A route is one
torch.compile (about a minute on 2 shared cores; two routes took 171 s of a 15-minute CI suite).
Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gptuner_core.testing.dashboard_server import CHROMIUM
from gptuner_core.testing.dashboard_server import CHROMIUM_ARGS
from gptuner_core.testing.dashboard_server import ROOT
from gptuner_core.testing.dashboard_server import dashboard_server
from gptuner_core.testing.dashboard_server import wait_idle as _idle


pytest.importorskip("torch")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.torch,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM} (apt-get install chromium)"),
]
ARTIFACTS = ROOT / "test-artifacts"
SAMPLE = "torch_digits_cnn (torch)"
EXPRESSION = "-inductor:freezing=[off|on]"


def _fill(page, label: str, value: str) -> None:
    box = page.get_by_role("textbox", name=label, exact=True)
    box.fill(value)
    box.press("Enter")
    _idle(page)


def test_torch_sample_run_from_the_browser(tmp_path: Path) -> None:
    from playwright.sync_api import expect
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=90_000)  # the first torch sample render imports torch
    ARTIFACTS.mkdir(exist_ok=True)
    ws = tmp_path / "workspace"
    ws.mkdir()
    marks = {"start": time.monotonic()}
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-torch.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(90_000)
        try:
            page.goto(f"{url}/New_run")
            expect(page.get_by_role("heading", name="New tuning run")).to_be_visible()
            page.get_by_role("combobox", name="Sample model").click()
            page.get_by_role("option", name=SAMPLE, exact=True).click()
            _idle(page)
            box = page.get_by_role("textbox", name="Tunable expression (build it here or in the Knob explorer)")
            # the expression box is kept per backend: the ONNX one lingers in the page until the
            # rerun that switched to torch has finished drawing
            expect(box).to_have_count(1)
            expect(box).to_have_value("-torch:precision=[fp32|bf16] -inductor:freezing=[off|on]")
            box.fill(EXPRESSION)
            box.press("Control+Enter")
            _idle(page)
            page.get_by_text("Gate on ε (a study needs a gate or No gate)").first.click()  # then ε = 1e-3
            _idle(page)
            _fill(page, "Max candidates (blank = no limit)", "1")
            page.get_by_text("Backend options").click()
            _fill(page, "compile_threads (default: 0)", "1")
            page.get_by_text("Advanced: batch size").click()
            _fill(page, "Re-validate top k", "0")
            _fill(page, "max_time_s (default: 10)", "0.3")
            config = page.locator("code").filter(has_text='"backend": "torch"').first
            expect(config).to_be_visible()
            for text in ("torch_digits_cnn.py:factory", "torch_digits_eval.npz", EXPRESSION,
                         '"compile_threads": 1', '"revalidate_top_k": 0', '"task_metric": "top1"',
                         '"epsilon": 0.001'):
                expect(config).to_contain_text(text)
            page.screenshot(path=str(ARTIFACTS / "e2e-torch-1-new-run.png"), full_page=True)
            marks["form filled"] = time.monotonic()
            page.get_by_role("button", name="Start tuning").click()

            expect(page.get_by_role("heading", name="Live")).to_be_visible()
            deadline = time.monotonic() + 420
            finished = page.get_by_text("status: finished")
            while not finished.is_visible():
                assert time.monotonic() < deadline, "the torch run did not finish within 7 minutes"
                assert not page.get_by_text("status: failed").is_visible(), page.inner_text("body")
                page.wait_for_timeout(2000)
            marks["run finished"] = time.monotonic()
            _idle(page)
            page.screenshot(path=str(ARTIFACTS / "e2e-torch-2-live.png"), full_page=True)

            # Results: the report download is the file `gptuner report` writes
            page.get_by_role("link", name="See the results").click()
            button = page.get_by_role("button", name="Download report (HTML)")
            with page.expect_download() as info:
                button.click()
            report = Path(info.value.path()).read_text(encoding="utf-8")
            assert "<h1>gptuner study report:" in report and "id='verdict'" in report
            assert info.value.suggested_filename.endswith("-report.html")
            marks["report downloaded"] = time.monotonic()
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "e2e-torch-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    print("phases (s):", {k: round(v - marks["start"], 1) for k, v in marks.items()})
    studies = [d for d in ws.iterdir() if (d / "study.sqlite").is_file()]
    assert len(studies) == 1, studies
    config = json.loads((studies[0] / "study.json").read_text())
    assert config["backend"] == "torch" and config["model"].endswith("torch_digits_cnn.py:factory")
    from gptuner_core.storage import open_store

    with open_store(studies[0], readonly=True) as store:
        states = sorted(c.state.name for c in store.candidates(with_samples=False))
    assert states == ["COMPLETE"], states
