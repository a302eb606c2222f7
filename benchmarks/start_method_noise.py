"""Does the way a measuring process is started change how much its measurement varies?

The same ONNX Runtime route (the MLP of ``aa_false_winners.py``) is measured ``--processes`` times,
each time in a fresh process, alternating between the two ways the tuner can start one
(``engine.process.isolation.run_isolated``): ``launcher`` (a fork of the pre-imported launcher, what the
tuner uses for ONNX Runtime on Linux) and ``spawn`` (a new interpreter). For each way it prints
the median of the per-process medians and their spread (coefficient of variation, and max/min).
Between-process spread is what screening ranks against, so a start method that adds to it makes
screening pick the wrong contenders. It measures; it asserts nothing.

    .venv/bin/python benchmarks/start_method_noise.py --processes 12
    .venv/bin/python benchmarks/start_method_noise.py --processes 12 --load 1
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))

from _load import competing_load  # noqa: E402
from aa_false_winners import build_mlp  # noqa: E402
from aa_false_winners import run_fresh  # noqa: E402


def measure_once(job: dict, method: str) -> float:
    try:
        return float(run_fresh(job, start_method=method)["median_ms"])
    except RuntimeError as exc:
        raise SystemExit(f"measurement failed ({method}): {exc}") from None


def main(argv: list[str] | None = None) -> int:
    from gptuner_core.measurement import SamplingSettings

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--processes", type=int, default=12, help="fresh processes per start method")
    p.add_argument("--screen-max-s", type=float, default=3.0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--load", type=int, default=0, help="competing CPU-bound processes (0)")
    args = p.parse_args(argv)
    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    settings = SamplingSettings(max_time_s=args.screen_max_s, gpu_index=None).to_json()
    medians: dict[str, list[float]] = {"launcher": [], "spawn": []}
    seconds = {"launcher": 0.0, "spawn": 0.0}
    with tempfile.TemporaryDirectory() as tmp, competing_load(args.load) as pids:
        model = str(build_mlp(Path(tmp) / "mlp.onnx", width=512))
        job = {"model": model, "batch": args.batch, "threads": 1, "config": {}, "mode": "adaptive",
               "settings": settings}
        print(f"{args.processes} processes per method, alternating; {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.2f}, competing CPU-bound processes: {len(pids)}")
        for i in range(args.processes):
            for method in (("launcher", "spawn") if i % 2 == 0 else ("spawn", "launcher")):
                t0 = time.perf_counter()
                medians[method].append(measure_once(job, method))
                seconds[method] += time.perf_counter() - t0
    print("| start method | median of medians ms | CV of medians | max/min | s per process |")
    print("|---|---|---|---|---|")
    for method, values in medians.items():
        cv = statistics.stdev(values) / statistics.mean(values)
        print(f"| {method} | {statistics.median(values):.4f} | {cv:.1%} | {max(values) / min(values):.3f}x "
              f"| {seconds[method] / len(values):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
