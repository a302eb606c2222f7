"""The page URLs ``serve.py`` answers itself: Streamlit's ``index.html`` telling the frontend where
the server's root is (issue 39 item 17; the browser side is in
tests/e2e/test_clicks_links_console_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.dashboard.page_urls import index_html
from gptuner_core.dashboard.page_urls import page_routes
from gptuner_core.dashboard.page_urls import page_url_paths


STATIC = "<html><head><title>x</title><script type=module src=./a.js></script></head></html>"


def test_the_base_url_is_set_before_the_frontend_loads() -> None:
    html = index_html(STATIC)
    assert html.index("BACKEND_BASE_URL") < html.index("<script type=module")
    assert 'window.location.origin + ""' in html
    assert 'window.location.origin + "/tuner"' in index_html(STATIC, "tuner/")


def test_an_index_without_scripts_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="no <script>"):
        index_html("<html></html>")


def test_every_page_url_but_the_root_is_routed(tmp_path: Path) -> None:
    import asyncio

    (tmp_path / "index.html").write_text(STATIC)
    routes = page_routes(tmp_path)
    assert [r.path for r in routes] == [f"/{p}" for p in page_url_paths()]
    assert "/Results" in [r.path for r in routes] and "/Overview" in [r.path for r in routes]
    assert "/" not in [r.path for r in routes]  # Streamlit's own (no probe there)
    assert [r.path for r in page_routes(tmp_path, "/tuner")][0] == "/tuner/Overview"
    resp = asyncio.run(routes[0].endpoint(None))
    assert resp.status_code == 200 and b"BACKEND_BASE_URL" in resp.body
    assert resp.headers["cache-control"] == "no-cache"
