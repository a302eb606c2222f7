"""In real headless Chromium: "is B faster than A?" on Compare. A small real study of the bundled
mlp_digits sample (ONNX Runtime, two routes, short windows) is tuned, the button starts the
interleaved re-validation in the background (4 rounds in fresh processes), the page follows its
progress and shows the stored result: the record ``gptuner revalidate`` prints."""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

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
SAMPLE = ROOT / "assets" / "mlp_digits.onnx"
QUICK = ["max_time_s=0.2", "min_samples=10", "max_samples=200", "warmup_s=0.01"]


def _study(ws: Path) -> Path:
    from gptuner_core.cli import main

    data = ws.parent / "digits64.npz"
    with np.load(ROOT / "assets" / "mlp_digits_eval.npz") as src:
        np.savez(data, **{k: src[k][:64] for k in src.files})
    study = ws / "digits"
    assert main([
        "tune", str(SAMPLE), "--dataset", str(data), "--batch-size", "16", "--backend", "onnxruntime",
        "--expr", "-ort:intra_op_num_threads=[1|2]", "--study", str(study), "--epsilon", "1e-3", "--revalidate-top-k", "0",
        "--drift-every", "0", "--profile-runs", "0", "--quiet",
        *[a for opt in QUICK for a in ("--measure-option", opt)],
    ]) == 0
    return study


def test_compare_button_revalidates_the_pair(tmp_path: Path, monkeypatch) -> None:
    from playwright.sync_api import expect
    from playwright.sync_api import sync_playwright

    from gptuner_core.engine.decide.pairwise import latest_comparison

    expect.set_options(timeout=60_000)
    ARTIFACTS.mkdir(exist_ok=True)
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(tmp_path / "locks"))  # no other study's lock
    ws = tmp_path / "ws"
    t0 = time.monotonic()
    study = _study(ws)
    tuned = time.monotonic() - t0
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-compare.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        page.set_default_timeout(60_000)
        try:
            page.goto(f"{url}/Compare?study=digits")
            _idle(page)
            expect(page.get_by_role("heading", name="Is B faster than A? (interleaved re-validation)")).to_be_visible()
            # the pickers open on the study's own pick (winner or best first), which depends on
            # which of the three routes (the default #0 and the two thread counts) this CPU ran
            # faster: read the pair from the page
            caption = page.get_by_text(re.compile(r"^#\d+ has not been re-validated against #\d+ yet\.$"))
            expect(caption).to_be_visible()
            b, a = (int(n) for n in re.findall(r"#(\d+)", caption.inner_text())[:2])
            assert a != b and {a, b} <= {0, 1, 2}, caption.inner_text()
            # the first click's list can still close at once (issue 26 item 3, open): the box keeps
            # focus but the list is gone; no script run follows (websocket trace) and the charts
            # no longer move the box (charts.plotly), the rest of the cause is not found yet.
            # Open it until the option shows
            box = page.get_by_role("combobox", name="Round budget")
            option = page.get_by_role("option", name="4", exact=True)
            for _ in range(3):
                box.click()
                with contextlib.suppress(PlaywrightTimeout):
                    option.wait_for(timeout=3000)
                    break
            option.click()
            _idle(page)
            clicked = time.monotonic()
            page.get_by_role("button", name=f"Re-validate #{b} vs #{a}").click()
            result = page.get_by_text(f"#{b} vs #{a}: ").filter(has_text="after 4 rounds")
            deadline = time.monotonic() + 240
            while not result.first.is_visible():
                assert time.monotonic() < deadline, page.inner_text("body")
                assert not page.locator('[data-testid="stException"]').count(), page.inner_text("body")
                assert not page.get_by_text("The last comparison failed").count(), page.inner_text("body")
                page.wait_for_timeout(1000)
            measured = time.monotonic() - clicked
            stored = latest_comparison(study, a, b)
            assert stored is not None and stored.rounds == 4
            expect(page.get_by_text(stored.headline()).first).to_be_visible()
            expect(page.get_by_text(f"Speed-up of #{b} vs #{a}")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "e2e-compare-pairwise.png"), full_page=True)

            page.reload()  # re-opening the page shows the stored result
            _idle(page)
            expect(page.get_by_text(stored.headline()).first).to_be_visible()
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "e2e-compare-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    print(f"tune {tuned:.1f} s, re-validation from the click {measured:.1f} s")
