"""Start the dashboard as a real ``streamlit run`` server (for the browser test and the
screenshot script). No streamlit import here: the server is a child process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dashboard_server(workspace: Path, *, log: Path, timeout_s: float = 60.0,
                     root: Path = ROOT) -> Iterator[str]:
    """Run the dashboard (``streamlit run serve.py``, ``app.py`` in a checkout without it) on
    127.0.0.1 and a free port; yield its base URL.

    ``root`` is the checkout whose ``app.py`` and ``gptuner_core`` run (another worktree for a
    side-by-side benchmark)."""
    port = free_port()
    entry = root / "serve.py" if (root / "serve.py").is_file() else root / "app.py"
    env = {**os.environ, "GPTUNER_WORKSPACE": str(workspace), "PYTHONUNBUFFERED": "1"}
    if root != ROOT:
        env["PYTHONPATH"] = str(root)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as out:
        proc = subprocess.Popen(  # noqa: S603 - our interpreter, fixed arguments
            [sys.executable, "-m", "streamlit", "run", str(entry),
             "--server.address", "127.0.0.1", "--server.port", str(port),
             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                msg = f"streamlit did not start (exit {proc.poll()}); see {log}"
                raise RuntimeError(msg)
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


IDLE_FOR_MS = 400
_SETTLED = """(ms) => {
  const app = document.querySelector('[data-testid="stApp"]');
  // drawn, too: Streamlit loads some element kinds (charts, tables, multiselects) lazily and
  // shows a short placeholder until then; the element then pushes what is below it down, and a
  // click aimed at a control below lands elsewhere (issue 26 item 3)
  const idle = app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')
    && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
      .every((c) => c.querySelector('.main-svg'));
  const now = performance.now();
  if (!idle || window.__gptunerIdleSince == null) { window.__gptunerIdleSince = idle ? now : null; }
  return idle && now - window.__gptunerIdleSince >= ms;
}"""


def wait_idle(page: object) -> None:
    """Wait until the app has settled in a Playwright ``page``: no script run, no stale element and
    nothing still to draw (no placeholder, every chart drawn) for ``IDLE_FOR_MS`` on end. A rerun
    still in flight would overwrite what a test types next, and the rerun a click asks for may
    not have started yet when the click returns: one look at the run state can see the run before
    it, with the old page still drawn."""
    page.evaluate("() => { window.__gptunerIdleSince = null; }")  # type: ignore[attr-defined]
    page.wait_for_function(_SETTLED, arg=IDLE_FOR_MS)  # type: ignore[attr-defined]
