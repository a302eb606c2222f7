"""Build ahead vs one candidate at a time: the same study twice, wall time side by side.

Runs ``gptuner tune TUNE_ARGS --study DIR/<mode>`` in a fresh process per mode: ``sequential``
(``ScaleOut(build_workers=1)``, today's loop) and ``ahead`` (``--build-workers K``, default from
cores and memory), then prints one JSON line per mode (wall seconds, candidates, winner route and
speed-up, verdict) and the ratio. It measures; it asserts nothing. Each line also says where the
time went: ``startup_s`` (before the first candidate), ``loop_s`` (first candidate started to last
finished), ``finish_s`` (re-validation and the rest after the last candidate), ``build_s`` (summed
build seconds), ``device_free_builds`` (builds that ran nothing on the device, so could overlap a
measurement), ``measure_section_s`` (summed time candidates held the device after their build: a
fresh process loading the artifact, the study's inputs, the timing and the profile), and
``load_s`` / ``cache_misses`` (the torch backend's loads in another process, from the logs: seconds
and FX-graph/AOTAutograd cache misses; 0 misses: nothing was compiled again)::

    python benchmarks/build_ahead.py --dir /tmp/ba --build-workers 5 -- assets/torch_digits_cnn.py \\
        --backend torch --backend-option device=cuda:0 \\
        --expr '-torch:mode=[default|max-autotune-no-cudagraphs] -inductor:freezing=[off|on] \\
        -torch:precision=[fp32|bf16|fp16]' --search full \\
        --dataset assets/torch_digits_eval.npz --batch-size 32 --metric cos --epsilon 0.01

(5 build workers: the default on a 16-core 128 GiB host.) On a GPU, 9 of those 12 builds run
work on the device while compiling (max-autotune benchmarks, freezing's constant folding) and so
never overlap a measurement; ``device_free_builds`` counts the others. A study whose builds all
compile on the CPU shows what overlap gives at most: ``--expr '-torch:mode=[default|reduce-overhead]
-inductor:aggressive_fusion=[off|on] -torch:precision=[fp32|tf32|bf16|fp16]'``.
"""

from __future__ import annotations

import argparse
import json
import re
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


LOADED = re.compile(r"from its Inductor cache in ([0-9.]+) s \((\{.*\})\)")


def _loads(study: Path) -> tuple[float, int, int]:
    """Seconds, count and cache misses of the torch loads logged under ``study``."""
    seconds, count, misses = 0.0, 0, 0
    for log in study.rglob("log.txt"):
        for m in LOADED.finditer(log.read_text(encoding="utf-8", errors="replace")):
            stats = json.loads(m.group(2))
            seconds, count = seconds + float(m.group(1)), count + 1
            misses += int(stats.get("fxgraph_cache_miss", 0)) + int(stats.get("autograd_cache_miss", 0))
    return seconds, count, misses


def _breakdown(recs: list, start: float, end: float, study: Path) -> dict[str, object]:
    started = [r.started_at for r in recs if r.started_at]
    finished = [r.finished_at for r in recs if r.finished_at]
    section = 0.0
    for r in recs:
        tl, phases = r.extra.get("timeline") or {}, r.extra.get("phase_times") or {}
        if "measure_start" in tl:
            section += tl["measure_end"] - tl["measure_start"]
        elif isinstance(phases, dict):
            section += float(phases.get("measure", 0)) + float(phases.get("profile", 0))
    load_s, loads, misses = _loads(study)
    return {
        "startup_s": round(min(started) - start, 1) if started else None,
        "loop_s": round(max(finished) - min(started), 1) if started and finished else None,
        "finish_s": round(end - max(finished), 1) if finished else None,
        "build_s": round(sum(r.build_time_s or 0 for r in recs), 1),
        "device_free_builds": sum(1 for r in recs if (r.extra.get("info") or {}).get("build_uses_device") is False),
        "measure_section_s": round(section, 1),
        "loads": loads, "load_s": round(load_s, 1), "cache_misses": misses,
    }


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
    from gptuner_core.engine.scale.scale_out import default_build_workers
    from gptuner_core.storage import open_store

    workers = args.build_workers or default_build_workers()
    rows = {}
    for mode in args.modes.split(","):
        study = args.dir / mode
        t0, start = time.perf_counter(), time.time()
        code = subprocess.call([sys.executable, __file__, "--child", mode, str(workers), str(study), *tune_args])
        wall = time.perf_counter() - t0
        with open_store(study, readonly=True) as store:
            recs, winner = store.candidates(), store.winner()
        best = recs[winner.number] if winner and winner.number is not None else None
        rows[mode] = {
            "mode": mode, "build_workers": 1 if mode == "sequential" else workers, "exit": code,
            "wall_s": round(wall, 2), "candidates": len(recs),
            **_breakdown(recs, start, time.time(), study),
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
