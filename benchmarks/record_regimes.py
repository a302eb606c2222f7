"""Record per-process and within-window latency samples of ONNX Runtime, to show regimes.

Each of ``--processes`` FRESH processes (``multiprocessing`` spawn, as the tuner's children) opens
an ONNX Runtime session on ``assets/cnn_digits.onnx`` with ``ort.SessionOptions()`` defaults
(log level 3, CPU provider; the ORT backend's default route), feeds the first ``--batch`` rows of
``assets/cnn_digits_eval.npz`` and measures with ``gptuner_core.measurement.measure`` (default
sampling, capped at ``--max-s``). The per-process medians, each window's sample count and median,
and the samples of ``--keep`` windows are written as JSON (``--out``), with the command, time, CPU
count and load average. ``detect_regimes`` is applied to the per-process medians and to every
window and the result printed.

    .venv/bin/python benchmarks/record_regimes.py --out tests/data/ort_regimes.json
    .venv/bin/python benchmarks/record_regimes.py --out tests/data/ort_regimes.json --append

``tests/data/ort_regimes.json`` holds three runs of 16 processes (``--max-s 0.5``) recorded one after
the other with this script on the 2-core development VM while other agents were working (load
average per run in the file); every run is kept, none was picked.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _child(job: dict[str, Any], conn: Any) -> None:
    try:
        import numpy as np
        import onnxruntime as ort

        from gptuner_core.measurement import SamplingSettings
        from gptuner_core.measurement import measure

        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(job["model"], so, providers=["CPUExecutionProvider"])
        feeds = {"input": np.load(job["data"])["input"][: job["batch"]]}
        run = sess.run

        def time_calls(n: int) -> int:
            t = time.perf_counter_ns()
            for _ in range(n):
                run(None, feeds)
            return time.perf_counter_ns() - t

        r = measure(time_calls, SamplingSettings(max_time_s=job["max_s"], gpu_index=None))
        conn.send({"samples_ms": list(r.samples_ms), "median_ms": r.stats.median_ms,
                   "calls_per_sample": r.stats.calls_per_sample, "busy": r.telemetry.get("busy")})
    except Exception as exc:
        conn.send({"error": repr(exc)})
    finally:
        conn.close()


def run_fresh(job: dict[str, Any]) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(job, child))
    proc.start()
    child.close()
    try:
        result = parent.recv()
    except EOFError:
        result = {"error": "child exited without a result"}
    proc.join(30)
    if "error" in result:
        raise RuntimeError(f"measurement child failed: {result['error']}")
    return result


def main(argv: list[str] | None = None) -> int:
    from gptuner_core.measurement import detect_regimes

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--processes", type=int, default=16)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--max-s", type=float, default=1.0, help="cap on each measurement, s (1.0)")
    p.add_argument("--keep", type=int, default=2, help="windows whose samples are kept (2)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--append", action="store_true", help="add this run to the runs in --out")
    args = p.parse_args(argv)
    job = {"model": str(ROOT / "assets/cnn_digits.onnx"),
           "data": str(ROOT / "assets/cnn_digits_eval.npz"), "batch": args.batch,
           "max_s": args.max_s}
    command = shlex.join(["python", *sys.argv])
    print("command:", command)
    load = os.getloadavg()[0]
    results = [run_fresh(job) for _ in range(args.processes)]
    medians = [r["median_ms"] for r in results]
    across = detect_regimes(medians, scope="processes")
    print(f"per-process medians (ms): {', '.join(f'{m:.3f}' for m in medians)}")
    print(f"across processes: bimodal={across.bimodal} {across.message}")
    windows = []
    for i, r in enumerate(results):
        reg = detect_regimes(r["samples_ms"], scope="window", route=0)
        windows.append((reg.bimodal, reg.separation or 0.0, i))
        print(f"process {i}: {len(r['samples_ms'])} samples, median {r['median_ms']:.3f} ms, "
              f"window bimodal={reg.bimodal} (separation {reg.separation or 0:.2f}x)")
    keep = [i for _, _, i in sorted(windows, reverse=True)[: args.keep]]
    if args.out:
        run = {
            "command": command, "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load_average_1m": round(load, 2), "batch": args.batch,
            "per_process_medians_ms": medians,
            "windows": [{"process": i, "samples_ms": [round(x, 5) for x in results[i]["samples_ms"]],
                         "calls_per_sample": results[i]["calls_per_sample"]} for i in keep],
        }
        data = {
            "what": "ONNX Runtime CPU, assets/cnn_digits.onnx, default SessionOptions, fresh "
                    "spawned process per measurement, gptuner_core.measurement.measure",
            "cpus": os.cpu_count(), "onnxruntime": __import__("onnxruntime").__version__,
            "runs": [],
        }
        if args.append and args.out.exists():
            data = json.loads(args.out.read_text())
        data["runs"].append(run)
        args.out.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
