"""gptuner dashboard server: ``streamlit run serve.py`` (what ``./dev.sh dashboard`` runs).

``app.py`` (the page list) under Streamlit's own ASGI server, plus one route per page URL that
tells the frontend where the server's root is, so a page loaded by its URL makes no request
that fails (see ``gptuner_core/dashboard/page_urls.py``). ``streamlit run app.py`` still works;
its page loads log two 404s each in the browser console.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st
from streamlit import config
from streamlit import file_util

from gptuner_core.dashboard.page_urls import page_routes


app = st.App(
    Path(__file__).with_name("app.py"),
    routes=page_routes(Path(file_util.get_static_dir()),
                       config.get_option("server.baseUrlPath") or ""),
)
