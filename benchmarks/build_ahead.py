"""Build ahead vs one candidate at a time: the same study twice, wall time side by side.

Runs ``gptuner tune TUNE_ARGS --study DIR/<mode>`` in a fresh process per mode: ``sequential``
(``ScaleOut(build_workers=1)``, today's loop) and ``ahead`` (``--build-workers K``, default from
cores and memory), then prints one JSON line per mode (wall seconds, candidates, winner route and
speed-up, verdict) and the ratio. It measures; it asserts nothing::

    python benchmarks/build_ahead.py --dir /tmp/ba -- assets/torch_digits_cnn.py --backend torch \\
        --backend-option device=cuda:0 --expr '-torch:mode=[default|max-autotune-no-cudagraphs] \\
        -inductor:freezing=[off|on] -torch:precision=[fp32|bf16|fp16]' --search full \\
        --dataset assets/torch_digits_eval.npz --batch-size 32 --metric cos --epsilon 0.01
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def _child(mode: str, workers: int, study: str, tune_args: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    from gptuner_core.cli import main

    build_workers = 1 if mode == "sequential" else workers
    return main(["tune", *tune_args, "--build-workers", str(build_workers), "--study", study, "--quiet"])


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        return _child(argv[1], int(argv[2]), argv[3], argv[4:])
    tune_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="folder for the two studies")
    parser.add_argument("--build-workers", type=int, default=0, help="0: from cores and memory")
    parser.add_argument("--modes", default="sequential,ahead")
    args = parser.parse_args(own)
    from gptuner_core.engine.scale_out import default_build_workers
    from gptuner_core.storage import open_store

    workers = args.build_workers or default_build_workers()
    rows = {}
    for mode in args.modes.split(","):
        study = args.dir / mode
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, __file__, "--child", mode, str(workers), str(study), *tune_args])
        wall = time.perf_counter() - t0
        with open_store(study, readonly=True) as store:
            recs, winner = store.candidates(), store.winner()
        best = recs[winner.number] if winner and winner.number is not None else None
        rows[mode] = {
            "mode": mode, "build_workers": 1 if mode == "sequential" else workers, "exit": code,
            "wall_s": round(wall, 2), "candidates": len(recs),
            "build_s": round(sum(r.build_time_s or 0 for r in recs), 2),
            "winner": best.requested_route if best else None,
            "speedup": winner.speedup if winner else None,
            "verdict": winner.verdict.value if winner and winner.verdict else None,
        }
        print(json.dumps(rows[mode]), flush=True)
    if {"sequential", "ahead"} <= rows.keys():
        seq, ahead = rows["sequential"], rows["ahead"]
        print(json.dumps({"wall_ratio": round(seq["wall_s"] / ahead["wall_s"], 2),
                          "same_winner": seq["winner"] == ahead["winner"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
