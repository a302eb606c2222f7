"""The dashboard's pages, the URL each is served at, and the HTML a page's URL answers with.

Streamlit's frontend, loaded at a page's URL (``/Results``), does not know where the server's
root is: it first probes ``/Results/_stcore/health`` and ``/Results/_stcore/host-config`` (a
server mounted under that path), each a 404 logged in the browser console, before ``/_stcore/``.
It skips the probe when the page sets ``window.__streamlit.BACKEND_BASE_URL``, so ``serve.py``
answers each page's URL with Streamlit's own ``index.html`` plus one script that sets it
(:func:`page_routes`). ``app.py`` builds its navigation from :data:`PAGES`, so both name the same
URLs. No Streamlit import here: ``serve.py`` builds the routes before any script runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from starlette.routing import Route


@dataclass(frozen=True)
class PageSpec:
    """One dashboard page: its script, sidebar title, sidebar icon and URL path."""

    script: str
    title: str
    icon: str
    url_path: str


#: the first page is the default one, served at ``/`` (its own path is never shown)
PAGES: tuple[PageSpec, ...] = (
    PageSpec("app_pages/0_Overview.py", "Overview", ":material/dashboard:", "home"),
    PageSpec("app_pages/1_Knob_explorer.py", "Knob explorer", ":material/tune:", "Knob_explorer"),
    PageSpec("app_pages/2_New_run.py", "New run", ":material/rocket_launch:", "New_run"),
    PageSpec("app_pages/3_Live.py", "Live", ":material/monitoring:", "Live"),
    PageSpec("app_pages/4_Results.py", "Results", ":material/insights:", "Results"),
    PageSpec("app_pages/5_Route_trace.py", "Route trace", ":material/route:", "Route_trace"),
    PageSpec("app_pages/6_Compare.py", "Compare", ":material/compare_arrows:", "Compare"),
    PageSpec("app_pages/7_Explain.py", "Explain", ":material/explore:", "Explain"),
)
#: the hidden page that leads /Overview to / (``app.py``)
OVERVIEW_URL_PATH = "Overview"


def page_url_paths() -> tuple[str, ...]:
    """Every URL path a browser may load a page at, besides ``/``."""
    return (OVERVIEW_URL_PATH, *(p.url_path for p in PAGES[1:]))


def index_html(static_index: str, base_url_path: str = "") -> str:
    """Streamlit's ``index.html`` with ``BACKEND_BASE_URL`` set before the frontend's scripts:
    the server's root is the page's origin plus ``base_url_path`` (``server.baseUrlPath``)."""
    base = "/" + base_url_path.strip("/") if base_url_path.strip("/") else ""
    script = ("<script>window.__streamlit = Object.assign(window.__streamlit || {}, "
              f"{{BACKEND_BASE_URL: window.location.origin + {json.dumps(base)}}});</script>\n")
    at = static_index.find("<script")
    if at < 0:
        msg = "Streamlit's index.html has no <script>: cannot set the backend's URL before it"
        raise ValueError(msg)
    return static_index[:at] + script + static_index[at:]


def page_routes(static_dir: Path, base_url_path: str = "") -> list[Route]:
    """One route per page URL (``/Results``, ...) answering with :func:`index_html`."""
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    html = index_html((static_dir / "index.html").read_text(encoding="utf-8"), base_url_path)
    prefix = "/" + base_url_path.strip("/") if base_url_path.strip("/") else ""

    async def page(_request: object) -> HTMLResponse:
        return HTMLResponse(html, headers={"Cache-Control": "no-cache"})

    return [Route(f"{prefix}/{path}", page, methods=["GET", "HEAD"]) for path in page_url_paths()]
