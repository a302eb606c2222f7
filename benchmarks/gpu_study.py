"""The GPU study at the speed of the GPU: today's sequential path against the fork server with
builds overlapped, the same ResNet-50 study side by side on one machine (issue 29).

Modes (each ``gptuner tune ... --study DIR/<mode>`` in a fresh process):

* ``old``: ``GPTUNER_START_METHOD=spawn GPTUNER_OVERLAP=off --build-workers 1``: every candidate
  and every re-validation process a spawned interpreter, one candidate at a time (the code
  before issue 29);
* ``new``: the torch fork server (``GPTUNER_START_METHOD=auto``), ``GPTUNER_OVERLAP=on`` and
  ``--build-workers K``: candidates build beside the one being measured and measure in the
  process that built them.

One JSON line per mode: wall seconds to the verdict, screening seconds (first candidate started
to last finished), GPU busy share during screening and over the whole run (NVML utilisation
sampled every 0.2 s by this process), start-up per process (median and max, candidates and
re-validation: request to the child's first phase), seconds per re-validation round split into
start-up, compile (the model, CUDA's set-up and the route from the warm Inductor cache) and
measure, the winner and verdict; then the ratio. It measures; it asserts nothing::

    unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONPATH=$PWD
    python3 benchmarks/gpu_study.py --dir /tmp/gs --modes new,old --build-workers 5

Without ``-- TUNE_ARGS`` it tunes ResNet-50 (``benchmarks/resnet50_model.py``, random weights,
batch 32) over 8 routes: ``-torch:mode=[default|reduce-overhead]
-torch:precision=[fp32|tf32|bf16|fp16]``, ``--search full``, re-validation of the best against
the default (``--revalidate-top-k 1 --revalidate-rounds 4``), ``max_time_s=3`` per screening.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "benchmarks" / "resnet50_model.py"
EXPR = "-torch:mode=[default|reduce-overhead] -torch:precision=[fp32|tf32|bf16|fp16]"
ENV = {
    "old": {"GPTUNER_START_METHOD": "spawn", "GPTUNER_OVERLAP": "off"},
    "new": {"GPTUNER_START_METHOD": "auto", "GPTUNER_OVERLAP": "on"},
}


def default_tune_args(folder: Path, device: str) -> list[str]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from resnet50_model import write_dataset

    data = folder / "resnet50_b32.npz"
    if not data.exists():
        folder.mkdir(parents=True, exist_ok=True)
        write_dataset(str(data))
    return [f"{MODEL}:factory", "--backend", "torch", "--backend-option", f"device={device}",
            "--expr", EXPR, "--search", "full", "--dataset", str(data), "--batch-size", "32",
            "--metric", "cos", "--epsilon", "0.05", "--revalidate-top-k", "1",
            "--revalidate-rounds", "4", "--measure-option", "max_time_s=3"]


def _child(mode: str, workers: int, study: str, tune_args: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    import logging

    from gptuner_core.cli import main

    logging.basicConfig(level=logging.WARNING)
    build_workers = 1 if mode == "old" else workers
    return main(["tune", *tune_args, "--build-workers", str(build_workers), "--study", study, "--quiet"])


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def summary(mode: str, study: Path, wall: float, busy, start: float, end: float) -> dict:
    from gptuner_core.engine.rounds import round_times
    from gptuner_core.storage import open_store

    with open_store(study, readonly=True) as store:
        recs, winner = store.candidates(), store.winner()
        events = [e.payload for e in store.events("revalidation")]
    best = recs[winner.number] if winner and winner.number is not None else None
    started = [r.started_at for r in recs if r.started_at]
    finished = [r.finished_at for r in recs if r.finished_at]
    s0, s1 = (min(started), max(finished)) if started and finished else (start, end)
    cand_start = [float((r.extra.get("phase_times") or {}).get("start", 0)) for r in recs
                  if (r.extra.get("phase_times") or {}).get("start") is not None]
    rounds = next((e["round_times"] for e in events if e.get("round_times")), None) or round_times(study)
    reval_start = [r["startup"] / r["processes"] for r in rounds if r.get("processes")]
    return {
        "mode": mode, "env": ENV.get(mode, {}), "wall_s": round(wall, 1), "candidates": len(recs),
        "screening_s": round(s1 - s0, 1), "finish_s": round(end - s1, 1),
        "gpu_busy_screening": busy.share(s0, s1) if busy else None,
        "gpu_busy_run": busy.share(start, end) if busy else None,
        "gpu_busy_source": busy.source if busy else "",
        "startup_candidates_median_s": _median(cand_start),
        "startup_candidates_max_s": round(max(cand_start), 3) if cand_start else None,
        "startup_rounds_mean_per_process_s": _median(reval_start),
        "build_s": round(sum(r.build_time_s or 0 for r in recs), 1),
        "states": {s: sum(1 for r in recs if r.state.value == s) for s in sorted({r.state.value for r in recs})},
        "rounds": rounds,
        "round_s_median": _median([r["total"] for r in rounds]),
        "round_wall_s_median": _median([r["wall"] for r in rounds if "wall" in r]),
        "winner": best.requested_route if best else None,
        "speedup": winner.speedup if winner else None,
        "verdict": winner.verdict.value if winner and winner.verdict else None,
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        return _child(argv[1], int(argv[2]), argv[3], argv[4:])
    tune_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--modes", default="new,old")
    parser.add_argument("--build-workers", type=int, default=0, help="0: from cores and memory")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--json", default=None, help="append the JSON lines here too")
    args = parser.parse_args(own)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_busy import GpuBusy

    from gptuner_core.engine.scale.scale_out import default_build_workers

    workers = args.build_workers or default_build_workers()
    tune_args = tune_args or default_tune_args(args.dir, args.device)
    print("tune args:", json.dumps(tune_args), f"build workers (new): {workers}", flush=True)
    rows = {}
    for mode in args.modes.split(","):
        study = args.dir / mode
        busy = GpuBusy(int(args.device.partition(":")[2] or 0)).start() if args.device != "cpu" else None
        t0, start = time.perf_counter(), time.time()
        env = {**os.environ, **ENV.get(mode, {})}
        code = subprocess.call([sys.executable, __file__, "--child", mode, str(workers), str(study), *tune_args],
                               env=env)
        wall, end = time.perf_counter() - t0, time.time()
        if busy:
            busy.stop()
        rows[mode] = {"exit": code, **summary(mode, study, wall, busy, start, end)}
        line = json.dumps(rows[mode])
        print(line, flush=True)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
    if {"old", "new"} <= rows.keys():
        old, new = rows["old"], rows["new"]
        line = json.dumps({"wall_ratio": round(old["wall_s"] / new["wall_s"], 2),
                           "same_winner": old["winner"] == new["winner"]})
        print(line, flush=True)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as fh:
                fh.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
