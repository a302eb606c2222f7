"""In real headless Chromium: the expression builder round trip (pick -> edit text -> load file ->
pick) on the Knob explorer, and every new view rendering on the bundled example study
(examples/studies/torch_h200, recorded on an NVIDIA H200). Screenshots go to test-artifacts/."""

from __future__ import annotations

import os
import re
import shutil
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
EXAMPLE = ROOT / "examples" / "studies" / "torch_h200"




CHART_VIEWS = ("Accuracy vs latency", "Speedup", "History", "Knob effect", "Parallel coordinates",
               "Timeline", "Latency EDF")


def _shot(page, chart: bool, path: Path) -> None:
    """Screenshot of the chart (or the page); an artifact, so a re-render in between only falls
    back to a page screenshot."""
    from playwright.sync_api import Error

    try:
        if chart:
            page.locator('[data-testid="stPlotlyChart"]').first.screenshot(path=str(path), timeout=15_000)
            return
    except Error:
        pass
    page.screenshot(path=str(path), full_page=True)


def _first_sample_knobs():
    """The knob database the Knob explorer opens with (the first bundled sample's)."""
    from gptuner_core.backends import get_backend
    from gptuner_core.dashboard.workspace import bundled_samples

    return get_backend("onnxruntime").describe(bundled_samples()[0].file)


def _multiselect(page, label: str):
    return page.locator('[data-testid="stMultiSelect"]').filter(has_text=label).first


def _pick(page, label: str, option: str) -> None:
    box = _multiselect(page, label)
    box.locator("input").click()
    box.locator("input").fill(option)  # the option list is virtualised: filter, then pick
    page.get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")
    _idle(page)


def test_builder_round_trip(tmp_path: Path, browser_page) -> None:
    """pick -> edit the text -> load a file with comments -> pick: every step keeps the others."""
    from playwright.sync_api import expect

    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    ws = tmp_path / "ws"
    ws.mkdir()
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-builder.log") as url:
        page.goto(f"{url}/Knob_explorer")
        expect(page.get_by_role("heading", name="Build a tunable expression")).to_be_visible()
        _idle(page)
        # 1. pick
        _pick(page, "Knobs to tune", "-quant:mode")
        box = page.get_by_role("textbox", name=re.compile("^Expression"))
        expect(box).to_have_value(re.compile(r"^-quant:mode=\["))
        # search narrows what is offered; the picked knob stays
        search = page.get_by_role("textbox", name="Search knobs (name, namespace, help)")
        search.fill("threads")
        search.press("Enter")
        expect(_multiselect(page, "Knobs to tune")).to_contain_text("3 of")
        expect(_multiselect(page, "Knobs to tune")).to_contain_text("-quant:mode")
        expect(box).to_have_value(re.compile(r"^-quant:mode=\["))
        # 2. edit the text: parsed back into the pickers
        box.fill("-quant:mode=[off|qdq] -ort:intra_op_num_threads=1")
        box.press("Control+Enter")
        expect(_multiselect(page, "Knobs to tune")).to_contain_text("-ort:intra_op_num_threads")
        expect(_multiselect(page, "Knobs to tune")).to_contain_text("-quant:mode")
        _idle(page)
        page.screenshot(path=str(ARTIFACTS / "e2e-builder-1-text.png"), full_page=True)
        # 3. load a file with comments and blank lines: text and pickers move together
        expr_file = tmp_path / "routes.txt"
        expr_file.write_text("# two knobs\n-quant:reduce_range=[off|on]\n\n"
                             "-ort:intra_op_num_threads=[0|1]  # cores\n")
        page.locator('[data-testid="stFileUploader"]').filter(has_text="expression file") \
            .locator('input[type="file"]').set_input_files(str(expr_file))
        expect(box).to_have_value("-quant:reduce_range=[off|on] -ort:intra_op_num_threads=[0|1]")
        expect(_multiselect(page, "Knobs to tune")).to_contain_text("-quant:reduce_range")
        expect(_multiselect(page, "Knobs to tune")).not_to_contain_text("-quant:mode")
        # 4. pick again: the knob joins the loaded ones, nothing is lost
        search.fill("")
        search.press("Enter")
        n = len(_first_sample_knobs())
        expect(_multiselect(page, "Knobs to tune")).to_contain_text(f"{n} of {n}")
        _pick(page, "Knobs to tune", "-quant:weight_type")
        expect(box).to_have_value(re.compile(
            r"^-quant:reduce_range=\[off\|on\] -ort:intra_op_num_threads=\[0\|1\] -quant:weight_type=\["))
        assert not page.locator('[data-testid="stException"]').count()
        page.screenshot(path=str(ARTIFACTS / "e2e-builder-2-file-then-pick.png"), full_page=True)


def test_new_views_on_the_example_study(tmp_path: Path, browser_page) -> None:
    """Every Results view, the study comparison and the route trace on the bundled H200 study."""
    from playwright.sync_api import expect

    from gptuner_core.dashboard.results import TABS

    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws / "torch_h200")
    shutil.copytree(EXAMPLE, ws / "torch_h200_copy")
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-views.log") as url:
        page.goto(f"{url}/Results?study=torch_h200")
        expect(page.get_by_role("heading", name="Results")).to_be_visible()
        _idle(page)
        for view in TABS:
            page.locator('[data-testid="stButtonGroup"]').get_by_role("radio", name=view,
                                                                      exact=True).click()
            _idle(page)
            assert not page.locator('[data-testid="stException"]').count(), view
            if view in CHART_VIEWS:
                expect(page.locator('[data-testid="stPlotlyChart"] .main-svg').first).to_be_visible()
            if view == "Accuracy vs latency":
                expect(page.locator(".legendtext").filter(has_text="winner #").first).to_be_attached()
                expect(page.locator(".legendtext").filter(has_text="default route #0").first).to_be_attached()
            slug = re.sub(r"[^a-z]+", "-", view.lower()).strip("-")
            _shot(page, view in CHART_VIEWS, ARTIFACTS / f"e2e-view-{slug}.png")

        page.goto(f"{url}/Compare?study=torch_h200")
        _idle(page)
        page.locator('[data-testid="stButtonGroup"]').get_by_role("radio", name="Studies").click()
        _idle(page)
        # the candidates view's own chart stays on screen until the rerun replaces it: wait for
        # the studies chart's legend, never count what happens to be drawn at this instant
        expect(page.locator(".legendtext").filter(has_text="torch_h200_copy").first).to_be_attached()
        expect(page.locator('[data-testid="stPlotlyChart"] .main-svg').first).to_be_visible()
        page.locator('[data-testid="stPlotlyChart"]').first.screenshot(
            path=str(ARTIFACTS / "e2e-view-compare-studies.png"))

        page.goto(f"{url}/Route_trace?study=torch_h200")
        _idle(page)
        expect(page.get_by_role("heading", name="Log")).to_be_visible()
        # recorded on the H200 at /tmp/torch_h200/...: the store relocates it into this copy
        expect(page.locator('[data-testid="stCode"]').first).to_be_visible()
        assert not page.get_by_text("another machine or folder").count()
        assert not page.get_by_text("(empty log at").count()
        assert not page.locator('[data-testid="stException"]').count()
        page.screenshot(path=str(ARTIFACTS / "e2e-view-route-trace.png"), full_page=True)
