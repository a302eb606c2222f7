"""Does a screening interval cover the re-validated speed-up? (issue 25, item 2)

Screening measures each route once, in one process, and gives a bootstrap interval over that
process's samples (``measurement.speedup``, 95 %). Re-validation measures the routes in fresh
processes, interleaved round by round, and takes the paired per-round medians. This benchmark
measures ``--rounds`` interleaved rounds of four ONNX Runtime routes of ``assets/cnn_digits.onnx``
(the default and three others), each route in a FRESH spawned process per round
(``record_regimes.run_fresh``). Each round in turn plays "screening"; the other rounds give the
re-validated speed-up (geometric mean of the paired per-round ratios). Coverage = the share of
(route, screening round) whose interval contains it, for

* the within-process bootstrap interval (what screening showed as a "95% CI"), and
* the same interval widened by process-to-process variation: ``sqrt(half_w**2 + (z * sqrt(2) *
  sd)**2)`` on the log scale, with ``sd`` the standard deviation of the default route's log
  per-process medians over the other rounds (what drift sentinels and re-measurements of the
  default measure in a study; ``measurement.process_spread``).

Quiet, then loaded (``--load N`` CPU hogs, ``benchmarks/_load.py``).

    .venv/bin/python benchmarks/interval_coverage.py --rounds 8 --load 2
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ROUTES = {0: {}, 1: {"threads": 1}, 2: {"opt": "basic"}, 3: {"threads": 2, "opt": "extended"}}


def _child(job: dict, conn: object) -> None:  # a fresh process: one route, one measurement
    try:
        import numpy as np
        import onnxruntime as ort

        from gptuner_core.measurement import SamplingSettings
        from gptuner_core.measurement import measure

        so = ort.SessionOptions()
        so.log_severity_level = 3
        if "threads" in job:
            so.intra_op_num_threads = job["threads"]
        if "opt" in job:
            so.graph_optimization_level = {
                "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED}[job["opt"]]
        sess = ort.InferenceSession(job["model"], so, providers=["CPUExecutionProvider"])
        feeds = {"input": np.load(job["data"])["input"][:1]}

        def time_calls(n: int) -> int:
            t = time.perf_counter_ns()
            for _ in range(n):
                sess.run(None, feeds)
            return time.perf_counter_ns() - t

        r = measure(time_calls, SamplingSettings(max_time_s=job["max_s"], gpu_index=None))
        conn.send({"samples_ms": list(r.samples_ms), "median_ms": r.stats.median_ms})  # type: ignore[attr-defined]
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        conn.send({"error": repr(exc)})  # type: ignore[attr-defined]
    finally:
        conn.close()  # type: ignore[attr-defined]


def fresh(job: dict) -> dict:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(job, child))
    proc.start()
    child.close()
    result = parent.recv()
    proc.join(30)
    if "error" in result:
        raise RuntimeError(result["error"])
    return result


def measure_rounds(rounds: int, max_s: float, seed: int) -> dict[int, list[dict]]:
    import numpy as np

    rng = np.random.default_rng(seed)
    base = {"model": str(ROOT / "assets/cnn_digits.onnx"), "data": str(ROOT / "assets/cnn_digits_eval.npz"),
            "max_s": max_s}
    out: dict[int, list[dict]] = {r: [] for r in ROUTES}
    for _ in range(rounds):
        for r in rng.permutation(list(ROUTES)):
            out[int(r)].append(fresh({**base, **ROUTES[int(r)]}))
    return out


def coverage(data: dict[int, list[dict]]) -> dict[str, float | int]:
    import numpy as np

    from gptuner_core.measurement import speedup
    from gptuner_core.measurement.process_spread import widened_interval

    z = 1.959964
    n = len(data[0])
    hits = {"within": 0, "widened": 0}
    total = 0
    for r in (k for k in ROUTES if k):
        for i in range(n):
            others = [j for j in range(n) if j != i]
            truth = math.exp(float(np.mean([math.log(data[0][j]["median_ms"] / data[r][j]["median_ms"])
                                            for j in others])))
            est = speedup(data[0][i]["samples_ms"], data[r][i]["samples_ms"])
            sd = float(np.std([math.log(data[0][j]["median_ms"]) for j in others], ddof=1))
            wide = widened_interval(est.point, est.ci, sd, z=z)
            hits["within"] += est.ci[0] <= truth <= est.ci[1]
            hits["widened"] += wide[0] <= truth <= wide[1]
            total += 1
    return {"points": total, "within": hits["within"] / total, "widened": hits["widened"] / total}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--max-s", type=float, default=0.5)
    p.add_argument("--load", type=int, default=2, help="CPU hogs for the loaded run (2)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    from benchmarks._load import competing_load

    print("command:", shlex.join(["python", *sys.argv]))
    print(f"cpus {os.cpu_count()}; {args.rounds} rounds x {len(ROUTES)} routes, fresh process each")
    rows = []
    for label in ("quiet", "loaded"):
        load0 = os.getloadavg()[0]
        if label == "quiet":
            data = measure_rounds(args.rounds, args.max_s, args.seed)
        else:
            with competing_load(args.load):
                data = measure_rounds(args.rounds, args.max_s, args.seed + 1)
        cov = coverage(data)
        rows.append((label, round(load0, 2), cov))
        print(f"{label} (load average {load0:.2f} at start): {cov['points']} (route, screening round) "
              f"points; within-process 95% interval covers {cov['within']:.0%}, widened by "
              f"process variation {cov['widened']:.0%}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
