"""Each dashboard page in a real browser, on synthetic 1,000 / 10,000 / 100,000-candidate studies,
side by side with another checkout (today's code) in one run.

Targets (issue 26; a page switch = from the click to the last element rendered): any page ≤ 1.5 s
on a workspace of 20 studies of 1,000 candidates (``--sizes 1000 --companions 19``), Results
≤ 1 s at 10,000 candidates and ≤ 3 s at 100,000. Issue 39: the same with two CPU hogs
(``--hogs 2``), and the Contour and Parallel coordinates views ≤ 2 s (``--views``: each picked
on Results from the first view, the click to the last DOM change).

For every size one workspace holds one synthetic study (written through the real SQLite store,
``gptuner_core.testing.synthetic_study``; ``--studies DIR`` keeps them between runs). Two real
``streamlit run`` servers read it, one at a time: this checkout and ``--base`` (today's code).
Headless Chromium (Playwright, one browser process started once, outside every clock) opens
every page (Overview, Knob explorer, New run, Live, Results, Route trace, Compare, Explain).

The clock: a ``MutationObserver`` installed before any page script records the time
(``performance.now()``) of every DOM change. A visit is over when the script run is over
(``stApp`` reports ``notRunning``), the page's own title is shown, no element is stale, no
spinner or skeleton is left, every plotly chart has drawn, and then nothing changed for
``--quiet`` ms. The figure is the time of the last DOM change minus the time of navigation, so
neither the polling nor the quiet wait is counted.

- ``switch``: in-app navigation from the sidebar (what a user does between pages; Streamlit is a
  single-page app): from the click to the last DOM change. Held against the targets.
- ``load``: a fresh browser load of the page URL (a new tab, a new Streamlit session: the
  frontend boots, connects, then the script runs): navigation start is ``performance.timeOrigin``.
  It includes Streamlit's own boot (JS bundle, websocket, plotly bundle), the same for every
  checkout and study size, measured as ``floor``: a bare page with a title and one small chart.
  ``load - floor`` is reported beside it (a fresh tab is not what the targets are about).

Each page is first loaded once per server to warm it (imports, caches of the store revision, the
plotly bundle); then each figure is the median of ``--reps`` visits.

    mkdir /tmp/base && git archive main | tar -x -C /tmp/base
    .venv/bin/python benchmarks/dashboard_browser.py --base /tmp/base [--sizes 1000,10000,100000]

(``--pages Results,Overview`` times only those pages; ``--rounds 2`` alternates the checkouts
twice, so a change of the machine's load falls on both.) On a shared, loaded machine the figures
are upper bounds; quote the load average and compare the two checkouts of the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TARGETS = {1_000: 1.5, 10_000: 1.0, 100_000: 3.0}  # switch, by the timed study's size (issue 26)
# page -> (URL path, sidebar link text, text of the page's title)
PAGES = {
    "Overview": ("", "Overview", "gptuner — studies"),
    "Knob_explorer": ("Knob_explorer", "Knob explorer", "Knob explorer"),
    "New_run": ("New_run", "New run", "New tuning run"),
    "Live": ("Live", "Live", "Live"),
    "Results": ("Results", "Results", "Results"),
    "Route_trace": ("Route_trace", "Route trace", "Route trace"),
    "Compare": ("Compare", "Compare", "Compare"),
    "Explain": ("Explain", "Explain", "Explain"),
}
FLOOR = {"Floor": ("", "", "Floor")}
VIEWS_FROM = "Accuracy vs latency"  # the Results view each timed view is picked from
OBSERVER_JS = """
window.__gtLast = performance.now();
new MutationObserver(() => { window.__gtLast = performance.now(); })
  .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""
# The framework's floor: a bare Streamlit page with a title and one small plotly chart, loaded the
# same way (what any Streamlit page costs on this machine before it does anything of its own).
FLOOR_APP = """import plotly.graph_objects as go
import streamlit as st
st.set_page_config(page_title="floor", layout="wide")
st.title("Floor")
st.plotly_chart(go.Figure(go.Scatter(x=[0, 1], y=[0, 1])))
"""
DONE_JS = """([title, quietMs]) => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  const h1 = document.querySelector('[data-testid="stMain"] h1');
  if (!h1 || !h1.textContent.includes(title)) return false;
  if (document.querySelector('[data-stale="true"], [data-testid="stSkeleton"], '
                             + '[data-testid="stSpinner"]')) return false;
  for (const c of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    if (!c.querySelector('.main-svg')) return false;
  }
  return performance.now() - window.__gtLast >= quietMs;
}"""


VIEW_TARGET = 2.0  # a Results view picked from the button row (issue 39 item 6: Contour, parcoords)


def target_for(n: int, name: str = "") -> float:
    if name.startswith("Results/"):
        return VIEW_TARGET
    return next((t for size, t in sorted(TARGETS.items()) if n <= size), 5.0)


def _done(tab, name: str, timeout_ms: int, quiet_ms: int) -> float:
    """Wait for the page to be complete and quiet; the page-clock time of its last DOM change."""
    title = {**PAGES, **FLOOR}[name][2]
    tab.wait_for_function(DONE_JS, arg=[title, quiet_ms], timeout=timeout_ms, polling=50)
    return float(tab.evaluate("() => window.__gtLast"))


def time_load(context, url: str, name: str, timeout_ms: int, quiet_ms: int) -> float:
    """A fresh load of the page's URL in a new tab: navigation start to the last DOM change."""
    tab = context.new_page()
    try:
        path = {**PAGES, **FLOOR}[name][0]
        tab.goto(f"{url}/{path}?study=scale", wait_until="commit", timeout=timeout_ms)
        return _done(tab, name, timeout_ms, quiet_ms) / 1000.0  # performance.now() starts at navigation
    finally:
        tab.close()


def time_switch(tab, name: str, timeout_ms: int, quiet_ms: int) -> float:
    """In-app navigation from the sidebar: the click to the last DOM change."""
    link = tab.locator('[data-testid="stSidebarNav"] a').filter(has_text=PAGES[name][1]).first
    t0 = float(tab.evaluate("() => performance.now()"))
    link.click()
    return (_done(tab, name, timeout_ms, quiet_ms) - t0) / 1000.0


def time_floor(browser, tmp: Path, args) -> float:
    """Median fresh load of the bare floor page (see ``FLOOR_APP``)."""
    from gptuner_core.testing.dashboard_server import dashboard_server

    root = tmp / "floor"
    root.mkdir(exist_ok=True)
    (root / "app.py").write_text(FLOOR_APP)
    with dashboard_server(tmp, log=tmp / "streamlit-floor.log", root=root, timeout_s=120) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_init_script(OBSERVER_JS)
        timeout, quiet = int(args.timeout * 1000), int(args.quiet)
        time_load(context, url, "Floor", timeout, quiet)
        times = [time_load(context, url, "Floor", timeout, quiet) for _ in range(max(args.reps, 3))]
        context.close()
    return statistics.median(times)


def time_view(tab, view: str, timeout_ms: int, quiet_ms: int) -> float:
    """A Results view picked from its button row: the click to the last DOM change."""
    button = tab.locator('[data-testid="stButtonGroup"] button').filter(has_text=view).first
    t0 = float(tab.evaluate("() => performance.now()"))
    button.click()
    return (_done(tab, "Results", timeout_ms, quiet_ms) - t0) / 1000.0


def _visit_views(tab, url: str, views: list[str], args, label: str, n: int, rows: list) -> None:
    """Each Results view in ``views`` picked after the first view (its figure drawn fresh)."""
    timeout, quiet = int(args.timeout * 1000), int(args.quiet)
    tab.goto(f"{url}/Results?study=scale", wait_until="commit")
    _done(tab, "Results", timeout, quiet)
    for view in views:
        try:
            time_view(tab, view, timeout, quiet)  # warm: the figure built once per revision
            times = []
            for _ in range(args.reps):
                time_view(tab, VIEWS_FROM, timeout, quiet)
                times.append(time_view(tab, view, timeout, quiet))
        except Exception as exc:  # noqa: BLE001 - report, continue
            print(f"[{n:,}] {label:5} {view:14} view failed: {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0][:120]}", flush=True)
            times = [float("nan")]
        rows.append((n, f"Results/{view}", "switch", label, times))
        print(f"[{n:,}] {label:5} {view:14} view   {statistics.median(times):6.2f} s", flush=True)


def _visit_all(context, url: str, pages: list[str], args, label: str, n: int, rows: list) -> None:
    timeout, quiet = int(args.timeout * 1000), int(args.quiet)
    for name in pages:  # warm the server: imports, caches of this store revision
        try:
            time_load(context, url, name, timeout, quiet)
        except Exception as exc:  # noqa: BLE001 - reported with the figures
            print(f"[{n:,}] {label:5} {name:14} warm-up failed: {type(exc).__name__}: "
                  f"{str(exc).splitlines()[0][:120]}", flush=True)
    tab = context.new_page()
    tab.goto(f"{url}/?study=scale", wait_until="commit")
    _done(tab, "Overview", timeout, quiet)
    for name in pages:
        for kind in ("load", "switch"):
            try:
                times = []
                for _ in range(args.reps):
                    if kind == "load":
                        times.append(time_load(context, url, name, timeout, quiet))
                    else:
                        other = "Live" if name == "Overview" else "Overview"
                        time_switch(tab, other, timeout, quiet)
                        times.append(time_switch(tab, name, timeout, quiet))
            except Exception as exc:  # noqa: BLE001 - report, continue
                print(f"[{n:,}] {label:5} {name:14} {kind} failed: {type(exc).__name__}: "
                      f"{str(exc).splitlines()[0][:120]}", flush=True)
                times = [float("nan")]
                tab.close()
                tab = context.new_page()
                tab.goto(f"{url}/?study=scale", wait_until="commit")
                _done(tab, "Overview", timeout, quiet)
            rows.append((n, name, kind, label, times))
            print(f"[{n:,}] {label:5} {name:14} {kind:6} {statistics.median(times):6.2f} s",
                  flush=True)
    if args.views:
        _visit_views(tab, url, [v for v in args.views.split(",") if v], args, label, n, rows)
    tab.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--base", type=Path, help="checkout to compare with (today's code)")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--quiet", type=float, default=500.0, help="ms without DOM change = done")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per page visit")
    parser.add_argument("--studies", type=Path, help="folder keeping the synthetic studies")
    parser.add_argument("--companions", type=int, default=0,
                        help="more studies of 1,000 candidates beside the timed one in each "
                             "workspace (issue 26: 19, a workspace of 20 studies)")
    parser.add_argument("--views", default="",
                        help="Results views to time too, e.g. 'Contour,Parallel coordinates'")
    parser.add_argument("--hogs", type=int, default=0,
                        help="CPU-bound processes spinning while the pages are timed (issue 39: 2)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="visit every checkout this many times, alternating (new, today, new, "
                             "...), so a change of the machine's load falls on both")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    from benchmarks._load import competing_load
    from gptuner_core.testing.dashboard_server import CHROMIUM
    from gptuner_core.testing.dashboard_server import CHROMIUM_ARGS
    from gptuner_core.testing.dashboard_server import dashboard_server
    from gptuner_core.testing.synthetic_study import write_synthetic_study

    sizes = [int(s) for s in args.sizes.split(",") if s]
    pages = [p for p in args.pages.split(",") if p]
    unknown = sorted(set(pages) - set(PAGES))
    if unknown:
        print(f"unknown pages {unknown}; expected some of {list(PAGES)}")
        return 2
    checkouts = {"new": ROOT} | ({"today": args.base.resolve()} if args.base else {})
    rows: list[tuple[int, str, str, str, float]] = []
    print(f"load average at start: {os.getloadavg()}; {args.companions} companion studies of "
          f"1,000 candidates per workspace; {args.hogs} CPU hogs", flush=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        keep = args.studies or Path(tmp)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        floor = time_floor(browser, Path(tmp), args)
        print(f"floor (bare Streamlit page + one plotly chart, fresh load): {floor:.2f} s", flush=True)
        for n in sizes:
            ws = keep / f"ws{n}"
            if not (ws / "scale" / "study.sqlite").is_file():
                t0 = time.perf_counter()
                write_synthetic_study(ws / "scale", n, samples=20, write_logs=False)
                print(f"[{n:,}] wrote the study in {time.perf_counter() - t0:.1f} s", flush=True)
            for i in range(args.companions):  # a busy workspace: every page lists these too
                other = ws / f"companion-{i:02d}"
                if not (other / "study.sqlite").is_file():
                    write_synthetic_study(other, 1_000, seed=i + 1, samples=20, write_logs=False)
                    os.utime(other / "study.sqlite", (1, 1))  # older: "scale" stays the newest
            with competing_load(args.hogs):
                for r in range(args.rounds):
                    for label, root in checkouts.items():
                        log = Path(tmp) / f"streamlit-{label}-{n}-{r}.log"
                        with dashboard_server(ws, log=log, root=root, timeout_s=120) as url:
                            context = browser.new_context(viewport={"width": 1400, "height": 1000})
                            context.add_init_script(OBSERVER_JS)
                            _visit_all(context, url, pages, args, label, n, rows)
                            context.close()
        browser.close()
    print(f"load average at end: {os.getloadavg()}")
    print(f"floor (bare Streamlit page, fresh load): {floor:.2f} s; ok = switch <= target")
    cols = [f"{kind}:{lab}" for kind in ("load", "switch") for lab in checkouts]
    print("\ncandidates  page" + " " * 26 + "  ".join(f"{c:>12}" for c in cols) + "  target  ok")
    ok_all = True
    views = [f"Results/{v}" for v in args.views.split(",") if v]
    for n in sizes:
        for name in pages + views:
            vals = {f"{k}:{lab}": statistics.median(
                        [t for (m, pg, kk, ll, ts) in rows if (m, pg, kk, ll) == (n, name, k, lab)
                         for t in ts] or [float("nan")])
                    for k in ("load", "switch") for lab in checkouts}
            ok = vals.get("switch:new", float("nan")) <= target_for(n, name)
            ok_all &= ok
            print(f"{n:>10,}  {name:28}  " + "  ".join(f"{vals.get(c, float('nan')):11.2f}s"
                                                      for c in cols)
                  + f"  {target_for(n, name):5.1f}s  {'yes' if ok else 'NO'}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
