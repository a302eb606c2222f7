"""Take one screenshot per dashboard page for the README (docs/screenshots/*.png).

By default it first runs a real tuning study on the bundled mlp_digits sample with the CLI (a few
minutes on 2 cores) and copies the bundled H200 study beside it (its Results views and the study
comparison are shot from that one); ``--workspace DIR`` reuses the studies already in DIR instead.

    .venv/bin/python scripts/screenshots.py [--workspace DIR] [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PAGES = {  # file name -> (url path, heading to wait for)
    "overview.png": ("", "gptuner — studies"),
    "knob_explorer.png": ("Knob_explorer", "Knob explorer"),
    "new_run.png": ("New_run", "New tuning run"),
    "live.png": ("Live", "Live"),
    "results.png": ("Results", "Results"),
    "route_trace.png": ("Route_trace", "Route trace"),
    "compare.png": ("Compare", "Compare"),
    "explain.png": ("Explain", "Explain"),
}
#: Results views of the bundled H200 study: file name -> view button
VIEWS = {
    "results_knob_effect.png": "Knob effect",
    "results_parallel_coordinates.png": "Parallel coordinates",
    "results_contour.png": "Contour",
    "results_timeline.png": "Timeline",
    "results_edf.png": "Latency EDF",
}
EXAMPLE = ROOT / "examples" / "studies" / "torch_h200"


def real_study(ws: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "gptuner_core", "tune", str(ROOT / "assets/mlp_digits.onnx"),
         "--backend", "onnxruntime", "--expr",
         "-ort:graph_optimization_level=[basic|all] -fp16:convert=[off|on] -quant:mode=[off|dynamic]",
         "--search", "fast", "--dataset", str(ROOT / "assets/mlp_digits_eval.npz"),
         "--metric", "l2", "--epsilon", "0.001", "--study", str(ws / "mlp_digits-demo")],
        check=True, cwd=ROOT,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()

    from playwright.sync_api import expect
    from playwright.sync_api import sync_playwright

    from gptuner_core.testing.dashboard_server import CHROMIUM
    from gptuner_core.testing.dashboard_server import CHROMIUM_ARGS
    from gptuner_core.testing.dashboard_server import dashboard_server
    from gptuner_core.testing.dashboard_server import wait_idle

    with tempfile.TemporaryDirectory() as tmp:
        ws = args.workspace
        if ws is None:
            ws = Path(tmp) / "workspace"
            ws.mkdir()
            real_study(ws)
            import shutil

            shutil.copytree(EXAMPLE, ws / "torch_h200")
        args.out.mkdir(parents=True, exist_ok=True)
        expect.set_options(timeout=60_000)
        with dashboard_server(ws, log=Path(tmp) / "streamlit.log") as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            for name, (path, heading) in PAGES.items():
                page.goto(f"{url}/{path}")
                expect(page.get_by_role("heading", name=heading).first).to_be_visible()
                # the run over, nothing stale or still to draw (the Overview table, the
                # explorer's builder were shot half-drawn after a fixed wait)
                wait_idle(page)
                page.screenshot(path=str(args.out / name))
                print(f"wrote {args.out / name}")
            if (ws / "torch_h200").is_dir():
                page.goto(f"{url}/Results?study=torch_h200")
                expect(page.get_by_role("heading", name="Results").first).to_be_visible()
                for name, view in VIEWS.items():
                    page.locator('[data-testid="stButtonGroup"]').get_by_role(
                        "radio", name=view, exact=True).click()
                    chart = page.locator('[data-testid="stPlotlyChart"] .main-svg').first
                    expect(chart).to_be_visible()
                    page.wait_for_timeout(1500)
                    page.locator('[data-testid="stPlotlyChart"]').first.screenshot(
                        path=str(args.out / name))
                    print(f"wrote {args.out / name}")
                page.goto(f"{url}/Compare?study=torch_h200")
                expect(page.get_by_role("heading", name="Compare").first).to_be_visible()
                page.locator('[data-testid="stButtonGroup"]').get_by_role("radio", name="Studies").click()
                expect(page.locator('[data-testid="stPlotlyChart"] .main-svg').first).to_be_visible()
                page.wait_for_timeout(1500)
                page.screenshot(path=str(args.out / "compare_studies.png"))
                print(f"wrote {args.out / 'compare_studies.png'}")
            browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
