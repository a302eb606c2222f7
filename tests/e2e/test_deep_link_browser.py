"""A dashboard whose first visitor arrives by a page's URL (a bookmark, a tab left open while
the server restarted) gets the dashboard's own navigation, not Streamlit's legacy one.

Streamlit decides once per server, at its first script run, whether the app is a legacy
``pages/``-folder app: when ``app.py`` sits beside a folder named ``pages`` and the first
request is for a page, it runs that page's file alone (``app.py`` never runs) and keeps doing so
for that visitor: the sidebar shows an extra "app" entry and none of the pages' icons."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gptuner_core.testing.dashboard_server import CHROMIUM
from gptuner_core.testing.dashboard_server import dashboard_server
from gptuner_core.testing.dashboard_server import wait_idle


pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}"),
]
TITLES = ["Overview", "Knob explorer", "New run", "Live", "Results", "Route trace", "Compare",
          "Explain"]


def _nav(page) -> list[str]:
    return [text.split("\n")[-1] for text in
            page.locator('[data-testid="stSidebarNav"] a').all_inner_texts()]


@pytest.mark.slow
def test_the_first_visit_by_a_page_url_gets_the_dashboard_navigation(tmp_path: Path,
                                                                    browser_page) -> None:
    from playwright.sync_api import expect

    page = browser_page
    with dashboard_server(tmp_path, log=tmp_path / "streamlit.log") as url:
        page.goto(f"{url}/Results")  # the server's very first visitor, by a page's URL
        wait_idle(page)
        expect(page.get_by_role("heading", name="Results")).to_be_visible()
        assert _nav(page) == TITLES
        icons = page.locator('[data-testid="stSidebarNav"] [data-testid="stIconMaterial"]')
        assert icons.count() == len(TITLES)  # app.py's pages, with their icons
        page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Knob explorer").click()
        wait_idle(page)
        assert _nav(page) == TITLES
        page.goto(f"{url}/Overview")
        wait_idle(page)
        expect(page.get_by_role("heading", name="gptuner — studies")).to_be_visible()
        assert _nav(page) == TITLES
