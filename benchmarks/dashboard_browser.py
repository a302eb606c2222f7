"""Each dashboard page in a real browser, on synthetic 1,000 / 10,000 / 100,000-candidate studies,
side by side with another checkout (today's code) in one run.

Targets (time to the last element rendered, per page): ≤ 1 s at 1,000 candidates, ≤ 1.5 s at
10,000, ≤ 5 s at 100,000.

For every size one workspace holds one synthetic study (written through the real SQLite store,
``gptuner_core.testing.synthetic_study``). Two real ``streamlit run`` servers read it: this checkout
and ``--base`` (e.g. a ``git worktree`` of commit 5985a8e). Headless Chromium (Playwright) opens
each page; the clock runs from navigation until the script is idle (``stApp`` reports
``notRunning``), every plotly chart has drawn its SVG/WebGL layer and no spinner or skeleton is
left. Pages are reached from the sidebar (in-app navigation, as a user switches pages); each is
loaded once first to warm the server (imports, caches), then timed ``--reps`` times and the median
reported. ``(full load)`` is one fresh browser load of Overview (frontend boot included).

    git worktree add --detach /tmp/gptuner_base 5985a8e
    .venv/bin/python benchmarks/dashboard_browser.py --sizes 1000 --base /tmp/gptuner_base

(``mkdir /tmp/b && git archive COMMIT | tar -x -C /tmp/b`` gives a base without a worktree;
``--pages Results,Overview`` times only those pages.)

Figures from a loaded machine are upper bounds; say so when quoting them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGETS = {1_000: 1.0, 10_000: 1.5, 100_000: 5.0}
PAGES = ("Overview", "Live", "Results", "Route_trace", "Compare", "Knob_explorer", "New_run")
TITLES = {p: p.replace("_", " ").replace("Route trace", "Route trace") for p in PAGES}
IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSkeleton"], [data-testid="stSpinner"]')) return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  for (const c of charts) { if (!c.querySelector('.main-svg')) return false; }
  return true;
}"""


def target_for(n: int) -> float:
    return next((t for size, t in sorted(TARGETS.items()) if n <= size), 5.0)


def _idle(page, timeout_ms: int) -> None:
    page.wait_for_function(IDLE_JS, timeout=timeout_ms, polling=50)


def time_load(page, url: str, timeout_ms: int) -> float:
    """A full page load (new session: the frontend boots, then the script runs)."""
    t0 = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="running"], '
                           '[data-testid="stApp"][data-test-script-state="notRunning"]',
                           timeout=timeout_ms)
    page.wait_for_timeout(50)
    _idle(page, timeout_ms)
    return time.perf_counter() - t0


def time_switch(page, name: str, timeout_ms: int) -> float:
    """In-app navigation from the sidebar (what a user does): click to last element drawn."""
    link = page.locator('[data-testid="stSidebarNav"] a').filter(has_text=TITLES[name]).first
    t0 = time.perf_counter()
    link.click()
    page.wait_for_url(f"**/{'' if name == 'Overview' else name}*", timeout=timeout_ms)
    page.wait_for_timeout(50)
    _idle(page, timeout_ms)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--base", type=Path, help="checkout to compare with (today's code)")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per page visit")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from gptuner_core.testing.dashboard_server import CHROMIUM
    from gptuner_core.testing.dashboard_server import CHROMIUM_ARGS
    from gptuner_core.testing.dashboard_server import dashboard_server
    from gptuner_core.testing.synthetic_study import write_synthetic_study

    sizes = [int(s) for s in args.sizes.split(",") if s]
    pages = [p for p in args.pages.split(",") if p]
    checkouts = {"new": ROOT} | ({"today": args.base.resolve()} if args.base else {})
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for n in sizes:
            ws = Path(tmp) / f"ws{n}"
            t0 = time.perf_counter()
            write_synthetic_study(ws / "scale", n, samples=20, write_logs=False)
            print(f"[{n:,}] wrote the study in {time.perf_counter() - t0:.1f} s", flush=True)
            for label, root in checkouts.items():
                log = Path(tmp) / f"streamlit-{label}-{n}.log"
                with dashboard_server(ws, log=log, root=root, timeout_s=120) as url:
                    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
                    timeout = int(args.timeout * 1000)
                    for name in pages:  # warm the server: imports, caches, plotly bundle
                        time_load(tab, f"{url}/{'' if name == 'Overview' else name}?study=scale",
                                  timeout)
                    cold = time_load(tab, f"{url}/?study=scale", timeout)
                    rows.append((n, "(full load)", label, cold))
                    print(f"[{n:,}] {label:5} {'(full load)':14} {cold:6.2f} s", flush=True)
                    for name in pages:
                        try:
                            times = []
                            for _ in range(args.reps):
                                if name == "Overview":
                                    time_switch(tab, "Live", timeout)
                                times.append(time_switch(tab, name, timeout))
                            med = statistics.median(times)
                        except Exception as exc:  # noqa: BLE001 - report, continue
                            print(f"[{n:,}] {label:5} {name:14} failed: {type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0][:120]}", flush=True)
                            med = float("nan")
                        rows.append((n, name, label, med))
                        print(f"[{n:,}] {label:5} {name:14} {med:6.2f} s", flush=True)
                    tab.close()
        browser.close()
    print("\ncandidates  page            " + "  ".join(f"{c:>8}" for c in checkouts) + "  target  ok")
    ok_all = True
    for n in sizes:
        for name in ["(full load)", *pages]:
            vals = {lab: t for (m, pg, lab, t) in rows if m == n and pg == name}
            new = vals.get("new", float("nan"))
            ok = new <= target_for(n)
            ok_all &= ok
            print(f"{n:>10,}  {name:14}  " + "  ".join(f"{vals.get(c, float('nan')):7.2f}s"
                                                      for c in checkouts)
                  + f"  {target_for(n):5.1f}s  {'yes' if ok else 'NO'}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
