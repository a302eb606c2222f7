"""Where a re-validation round's process spends its load: cProfile of one load from the cache.

Issue 38, item 2: a round's process loads its route ahead of its turn (``Backend.load_ahead``:
Dynamo traces the model again, Inductor finds the graph in its cache, the kernels are loaded).
On the H100, ConvNeXt-Tiny's loads took 13.5-27.5 s each with 15 side by side (ResNet-50's
4-9 s), where a fresh process took about 6 s alone. This script loads the route of a finished
study's round folder (``revalidation/rR_NNNNN``) again in a fresh process, after the torch fork
server's preload (torch, Inductor, the backend, the model's module; with ``--primed`` also the
keys the fork server computes, ``backends.torch_inductor.prime``), and prints the load's steps
(``load_stats``) and cProfile's top functions by cumulative and own time.

    python3 benchmarks/load_profile.py --study /tmp/h200_issue38/gr/02_convnext_tiny_new --out prof.txt

``--first-call`` profiles the round's turn instead (issue 38, item 2: on the H200 a ConvNeXt-Tiny
round's three processes measured 4.2-5.0 s for about 2.25 s of samples): the load done ahead,
untimed, then the first call under cProfile, three single calls and the samples.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]


def child(folder: Path, primed: bool, top: int, first_call: bool = False) -> None:
    """In this fresh process: the fork server's preload, untimed, then the load under cProfile
    (``first_call``: the load untimed, then the round's turn: its first call under cProfile,
    three single calls, and the round's samples)."""
    import cProfile
    import importlib

    from gptuner_core.engine.process.launcher_main import TORCH_PRELOAD

    t0 = time.perf_counter()
    for name in TORCH_PRELOAD:
        module, _, call = name.partition(":")
        if call and not primed:
            continue
        loaded = importlib.import_module(module)
        if call:
            getattr(loaded, call)()
    from gptuner_core.backends import BuildResult
    from gptuner_core.backends import load_backend
    from gptuner_core.backends.torch_inductor.model import warm_import
    from gptuner_core.records import ChildJob

    job = ChildJob.from_json(json.loads((folder / "job.json").read_text(encoding="utf-8")))
    warm_import(job.model)
    backend = load_backend(job.backend, job.backend_options)
    build = BuildResult(artifact=Path(str(job.artifact)), effective_route=job.effective_route or job.route,
                        info=job.info)
    preload_s = time.perf_counter() - t0
    if first_call:
        turn_profile(job, backend, build, top)
        return
    prof = cProfile.Profile()
    t1 = time.perf_counter()
    prof.enable()
    runner = backend.load_ahead(build)
    prof.disable()
    load_s = time.perf_counter() - t1
    print(json.dumps({"folder": folder.name, "route": job.route, "primed": primed,
                      "preload_s": round(preload_s, 3), "load_s": round(load_s, 3),
                      "load_stats": getattr(getattr(runner, "compiled", None), "load_stats", {})}))
    print(_top(prof, top))


def _top(prof, top: int) -> str:
    """cProfile's ``top`` functions by cumulative time and the first half of them by own time."""
    import io
    import pstats

    out = io.StringIO()
    if top:
        stats = pstats.Stats(prof, stream=out)
        stats.sort_stats("cumulative").print_stats(top)
        stats.sort_stats("tottime").print_stats(top // 2)
    return out.getvalue()


def turn_profile(job, backend, build, top: int) -> None:
    """Where a round's turn goes once its process has loaded ahead (``load_ahead``): the runner's
    first call (``prepare``: Triton's kernels loaded, CUDA graphs recorded) under cProfile, the
    next three calls one by one, and the samples with the round's settings, as ``child._measure``
    takes them."""
    import cProfile

    from gptuner_core.engine.process.child import first_batch
    from gptuner_core.engine.process.child import sampling_settings
    from gptuner_core.measurement import measure

    t0 = time.perf_counter()
    runner = backend.load_ahead(build)
    load_s = time.perf_counter() - t0
    first = first_batch(job)
    prof = cProfile.Profile()
    t1 = time.perf_counter()
    prof.enable()
    runner.prepare(first)
    prof.disable()
    first_s = time.perf_counter() - t1
    calls = []
    for _ in range(3):
        t = time.perf_counter()
        runner.time_calls(1)
        calls.append(round(time.perf_counter() - t, 4))
    settings = sampling_settings(job)
    t2 = time.perf_counter()
    result = measure(runner.time_calls, settings)
    sampling_s = time.perf_counter() - t2
    print(json.dumps({"folder": Path(str(job.artifact)).parent.name, "route": job.route, "load_s": round(load_s, 3),
                      "load_stats": getattr(getattr(runner, "compiled", None), "load_stats", {}),
                      "first_call_s": round(first_s, 3), "next_calls_s": calls,
                      "sampling_s": round(sampling_s, 3), "samples": len(result.samples_ms),
                      "median_ms": round(result.stats.median_ms, 4), "stop": result.stats.stop_reason,
                      "settings": {"max_time_s": settings.max_time_s, "warmup_s": settings.warmup_s}}))
    print(_top(prof, top))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", type=Path, help="a finished torch study folder with revalidation/")
    ap.add_argument("--folders", default="r0_",
                    help="comma-separated starts of round folder names (default r0_: round 0's)")
    ap.add_argument("--limit", type=int, default=2, help="profile at most this many folders (default 2)")
    ap.add_argument("--top", type=int, default=50)
    ap.add_argument("--out", type=Path, default=Path("load_profile.txt"))
    ap.add_argument("--parallel", default="",
                    help="also load the first folder's route in N fresh processes at once, for each N of "
                         "this comma-separated list (say 1,4,12): each load's steps, side by side")
    ap.add_argument("--first-call", action="store_true",
                    help="profile each folder's turn instead of its load: the first call (cProfile), "
                         "three single calls and the round's samples, the load done ahead, untimed")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--primed", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.primed, args.top, args.first_call)
        return 0
    if args.study is None or not (args.study / "revalidation").is_dir():
        print(f"load_profile: --study must be a study folder with revalidation/ (found {args.study})",
              file=sys.stderr)
        return 2
    folders = sorted(p for p in (args.study / "revalidation").iterdir()
                     if p.name.startswith(tuple(args.folders.split(","))) and (p / "job.json").is_file()
                     )[: args.limit]
    env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1", "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
           "PYTHONPATH": str(REPO)}
    with args.out.open("w", encoding="utf-8") as fh:
        for folder in folders:
            for primed in (True,) if args.first_call else (False, True):
                cmd = [sys.executable, __file__, "--child", str(folder), "--top", str(args.top)]
                cmd += ["--first-call"] if args.first_call else []
                done = subprocess.run(cmd + (["--primed"] if primed else []), env=env, capture_output=True,
                                      text=True, check=False)
                fh.write(f"=== {folder.name} primed={primed} rc={done.returncode}\n{done.stdout}\n")
                fh.write("".join(line + "\n" for line in done.stderr.splitlines()[-20:]))
                print(done.stdout.splitlines()[0] if done.stdout else f"{folder.name}: rc {done.returncode}",
                      flush=True)
        for n in [int(x) for x in args.parallel.split(",") if x.strip()][: 8] if folders else []:
            fh.write(side_by_side(folders[0], n, env) + "\n")
    return 0


def side_by_side(folder: Path, n: int, env: dict[str, str]) -> str:
    """``n`` fresh processes load ``folder``'s route at once (primed, unprofiled: --top 0): each
    one's load seconds and steps. A load that takes longer with more beside it, on a machine with a
    core for each, waits for something they share (the driver, the disk), not for the CPU."""
    cmd = [sys.executable, __file__, "--child", str(folder), "--top", "0", "--primed"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
             for _ in range(n)]
    rows = []
    for proc in procs:
        out, _ = proc.communicate()
        line = next((x for x in out.splitlines() if x.startswith("{")), "")
        rows.append(json.loads(line) if line else {"rc": proc.returncode})
    steps = [{k: r.get("load_stats", {}).get(k) for k in ("seconds", "model_s", "context_s", "compile_s")}
             for r in rows]
    text = json.dumps({"folder": folder.name, "side_by_side": n, "loads": steps})
    print(text, flush=True)
    return text


if __name__ == "__main__":
    raise SystemExit(main())
