"""Server-side time of every dashboard page on a large synthetic study (no browser).

Writes a synthetic study through the real SQLite store (or reuses ``--studies DIR/ws{N}``), then
runs each page script with Streamlit's AppTest (the real script, real store reads, real plotly
figures and tables). The server is first warmed on a small study (one-time imports of
pandas/plotly, as in a running server); then for each page it reports the first visit of the
large study (store read + frame build for the first page, caches of that store revision after)
and the median of ``--reruns`` reruns (what a user waits for on an interaction). With
``--profile PAGE`` it prints the top of a cProfile of that page's first visit.

    .venv/bin/python benchmarks/dashboard_scale.py [--n 10000] [--pages Results,Explain]

Browser figures (what a user sees, targets per size) come from ``dashboard_browser.py``.
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
PAGES = {
    "Overview": "app_pages/0_Overview.py", "Knob_explorer": "app_pages/1_Knob_explorer.py", "New_run": "app_pages/2_New_run.py",
    "Live": "app_pages/3_Live.py", "Results": "app_pages/4_Results.py", "Route_trace": "app_pages/5_Route_trace.py",
    "Compare": "app_pages/6_Compare.py", "Explain": "app_pages/7_Explain.py",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--reruns", type=int, default=2)
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--studies", type=Path, help="folder keeping the synthetic studies")
    parser.add_argument("--profile", help="page to profile (first visit)")
    args = parser.parse_args()

    from streamlit.testing.v1 import AppTest

    from gptuner_core.testing.synthetic_study import write_synthetic_study

    with tempfile.TemporaryDirectory() as tmp:
        ws = (args.studies or Path(tmp)) / f"ws{args.n}"
        if not (ws / "scale" / "study.sqlite").is_file():
            t0 = time.perf_counter()
            write_synthetic_study(ws / "scale", args.n, samples=20, write_logs=False)
            print(f"wrote {args.n} candidates in {time.perf_counter() - t0:.1f} s")
        warm_ws = Path(tmp) / "warm"  # its own workspace: Overview reads every study it holds
        write_synthetic_study(warm_ws / "small", 40, write_logs=False)
        os.environ["GPTUNER_WORKSPACE"] = str(warm_ws)
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        at.session_state["gptuner.study"] = "small"
        at.run()
        for name in args.pages.split(","):  # warm-up: imports, small study
            at.switch_page(PAGES[name]).run()
        os.environ["GPTUNER_WORKSPACE"] = str(ws)
        at.session_state["gptuner.study"] = "scale"
        print(f"load average {os.getloadavg()}")
        for name in args.pages.split(","):
            at.switch_page(PAGES[name])
            t0 = time.perf_counter()
            if name == args.profile:
                import cProfile
                import pstats

                prof = cProfile.Profile()
                prof.enable()
                at.run()
                prof.disable()
                pstats.Stats(prof).sort_stats("cumulative").print_stats(35)
            else:
                at.run()
            first = time.perf_counter() - t0
            assert not at.exception, (name, at.exception)
            warm = []
            for _ in range(args.reruns):
                t0 = time.perf_counter()
                at.run()
                warm.append(time.perf_counter() - t0)
            print(f"{name:14} {args.n:>7,} candidates: first visit {first:6.2f} s, rerun median "
                  f"{statistics.median(warm):6.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
