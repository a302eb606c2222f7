"""This checkout's dashboard against another checkout's, both servers up at once, every visit
alternating between them (so a change of the machine's load falls on both), with CPU hogs.

Fresh loads (a new tab by the page's URL) and sidebar switches, as ``dashboard_browser.py``
times them; the tab being timed is brought to the front first (a background tab's drawing is
throttled: without it the first try showed switches 2-3x slower on whichever tab was behind).

    mkdir /tmp/base && git archive main | tar -x -C /tmp/base
    .venv/bin/python benchmarks/dashboard_browser.py --sizes 1000 --companions 19 --studies /tmp/bench --pages Overview
    .venv/bin/python benchmarks/dashboard_ab.py --base /tmp/base --workspace /tmp/bench/ws1000 --reps 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="checkout to compare with")
    parser.add_argument("--workspace", type=Path, required=True, help="holds a study named 'scale'")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--hogs", type=int, default=2)
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    import benchmarks.dashboard_browser as db
    from benchmarks._load import competing_load
    from gptuner_core.testing.dashboard_server import CHROMIUM
    from gptuner_core.testing.dashboard_server import CHROMIUM_ARGS
    from gptuner_core.testing.dashboard_server import dashboard_server

    t, q = 180_000, 500
    res: dict[tuple[str, str, str], list[float]] = {}
    logs = args.workspace.parent
    print(f"load average at start: {os.getloadavg()}; {args.hogs} CPU hogs", flush=True)
    with sync_playwright() as p, competing_load(args.hogs), \
            dashboard_server(args.workspace, log=logs / "ab-new.log") as new, \
            dashboard_server(args.workspace, log=logs / "ab-today.log", root=args.base.resolve()) as old:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        ctx.add_init_script(db.OBSERVER_JS)
        urls = {"new": new, "today": old}
        for url in urls.values():  # warm both servers
            for name in db.PAGES:
                db.time_load(ctx, url, name, t, q)
        tabs = {}
        for label, url in urls.items():
            tabs[label] = ctx.new_page()
            tabs[label].goto(f"{url}/?study=scale", wait_until="commit")
            db._done(tabs[label], "Overview", t, q)
        for r in range(args.reps):
            order = ["new", "today"] if r % 2 == 0 else ["today", "new"]
            for name in db.PAGES:
                for label in order:
                    res.setdefault((name, "load", label), []).append(
                        db.time_load(ctx, urls[label], name, t, q))
                    tabs[label].bring_to_front()
                    db.time_switch(tabs[label], "Live" if name == "Overview" else "Overview", t, q)
                    res.setdefault((name, "switch", label), []).append(
                        db.time_switch(tabs[label], name, t, q))
            print(f"rep {r} done; load average {os.getloadavg()}", flush=True)
        browser.close()
    print(f"load average at end: {os.getloadavg()}")
    print(f"{'page':14} {'load new':>9} {'load today':>10} {'switch new':>10} {'switch today':>12}")
    for name in db.PAGES:
        m = {k: statistics.median(v) for k, v in res.items() if k[0] == name}
        print(f"{name:14} {m[(name, 'load', 'new')]:8.2f}s {m[(name, 'load', 'today')]:9.2f}s "
              f"{m[(name, 'switch', 'new')]:9.2f}s {m[(name, 'switch', 'today')]:11.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
