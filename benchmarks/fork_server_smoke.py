"""The torch fork server on the device: start-up per process, CUDA never initialised before a fork.

Starts the ``torch`` launcher (torch, Inductor, the backend and ``--model``'s module preloaded),
prints how long that took and whether it is safe to fork (one thread, no CUDA: neither
``torch.cuda.is_initialized()`` nor the CUDA driver library), then runs ``--children`` candidates'
processes forked from it and one spawned, each ``child_targets.cuda_probe``: CUDA's state at the
child's entry, the seconds from the request to the child's first phase (start-up), to initialise
the device, and to build and run the model once (eager). JSON lines; it asserts nothing::

    python3 benchmarks/fork_server_smoke.py --device cuda:0 --children 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--children", type=int, default=5)
    p.add_argument("--model", default=str(ROOT / "benchmarks" / "resnet50_model.py") + ":factory")
    args = p.parse_args(argv)
    from gptuner_core.engine.process import launcher
    from gptuner_core.engine.process.isolation import run_isolated

    t0 = time.perf_counter()
    server = launcher.shared("torch")
    maps = Path(f"/proc/{server.pid}/maps").read_text()
    print(json.dumps({"launcher_start_s": round(time.perf_counter() - t0, 2), "pid": server.pid,
                      "unsafe": server.unsafe, "threads": len(list(Path(f"/proc/{server.pid}/task").iterdir())),
                      "libcuda_mapped": "libcuda" in maps}), flush=True)
    job = {"backend": "torch", "backend_options": {"device": args.device}, "device": args.device,
           "model": args.model}
    starts = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.children + 1):
            method = "spawn" if i == args.children else "launcher"
            t1 = time.perf_counter()
            out = run_isolated("gptuner_core.testing.child_targets:cuda_probe", job, Path(tmp) / f"c{i}",
                               timeouts={"build": 300, "measure": 60}, start_method=method)
            row = {"method": method, "status": out.status, "error": out.error[:300],
                   "startup_s": round(out.phase_times.get("start", 0.0), 3),
                   "request_to_result_s": round(time.perf_counter() - t1, 3), **(out.result or {})}
            if method == "launcher":
                starts.append(row["startup_s"])
            print(json.dumps(row), flush=True)
    print(json.dumps({"forked_startup_median_s": statistics.median(starts) if starts else None,
                      "forked_startup_max_s": max(starts) if starts else None,
                      "launcher_still_safe": not launcher.shared("torch").unsafe}), flush=True)
    launcher.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
