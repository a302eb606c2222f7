"""gptuner dashboard entry point: the page list (``streamlit run serve.py`` serves it; see there).

Pages only render what ``gptuner_core`` computes; see ``app_pages/``. Long work never runs here: New run
starts the tuner as a detached process and Live polls the study store.

The folder is not called ``pages/``: beside a folder of that name Streamlit treats the app as a
legacy multipage app until ``app.py`` has run once, so a server's first visitor arriving by a
page's URL got that page's file run alone, with Streamlit's own sidebar (an "app" entry, no
icons) for the rest of the visit (tests/e2e/test_deep_link_browser.py).
"""

from __future__ import annotations

import streamlit as st

from gptuner_core.dashboard import page_urls


PAGES = [
    st.Page(p.script, title=p.title, icon=p.icon, url_path=p.url_path, default=i == 0)
    for i, p in enumerate(page_urls.PAGES)
]


def _overview_by_name() -> None:
    st.switch_page(PAGES[0])


# the default page is served at "/" only: /Overview leads there too (no "Page not found")
OVERVIEW_URL = st.Page(_overview_by_name, title="Overview", url_path=page_urls.OVERVIEW_URL_PATH,
                       visibility="hidden")

# a page icon before the navigation: without one, the browser tab's icon is the current page's
# material icon, which Streamlit's frontend fetches from fonts.gstatic.com (a failed request on
# an offline machine, on every page load); each page then sets its own emoji icon (drawn locally)
st.set_page_config(page_title="gptuner", page_icon="⚙️", layout="wide")
st.navigation([*PAGES, OVERVIEW_URL]).run()
