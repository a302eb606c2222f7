"""A/A benchmark: how often does a tuner declare a "winner" among routes that are all the same?

Four routes (``--routes``) run the same ONNX model with the same ONNX Runtime session options; routes 1.. only add
a session config entry ONNX Runtime ignores (``gptuner.aa_route=<i>``), so no route can be faster.
Each study is repeated ``--repeats`` times and every measurement runs in a FRESH process started
the way the tuner starts its candidates (``engine.process.isolation.run_isolated``: on Linux a fork of its
pre-imported launcher for ONNX Runtime work, else a spawned interpreter), for both methods.

* trtexec's method: one measurement per route (200 ms warm-up, then a fixed ``--window`` seconds,
  trtexec's default is 3 s), the route with the lowest mean wins; a "false winner" is any
  non-default route picked (with the speed-up it would report).
* ours: adaptive sampling per route (``SamplingSettings`` defaults, capped by ``--screen-max-s``),
  then SEQUENTIAL interleaved re-validation of the top-3 against the default in fresh processes
  (``revalidate_sequential``: rounds until each contender is winner / not faster, or the
  ``--max-rounds`` budget ends it inconclusive; Pocock alpha spending, Bonferroni over contenders).
  A false winner is any winner; "inconclusive" is the honest answer for equal routes at a 1 %
  min-effect and is counted separately.

``--load N`` runs N competing CPU-bound processes (started and killed by the benchmark) during
every study: the "under load" condition of the issue.

Target: at most 1 false winner in 20 studies for ours, quiet and under load.

    .venv/bin/python benchmarks/aa_false_winners.py                 # 20 studies, quiet
    .venv/bin/python benchmarks/aa_false_winners.py --load 1        # 20 studies, one busy core
    .venv/bin/python benchmarks/aa_false_winners.py --quick         # 3 studies, shorter windows

The model is a small MLP (MatMul+Relu layers, float32) built here with ``onnx.helper``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# -- model -------------------------------------------------------------------------------------


def build_mlp(
    path: Path, *, width: int, layers: int = 4, features: int = 512, seed: int = 0
) -> Path:
    """An MLP ``x[B, features] -> (MatMul + Relu) x layers -> y`` with float32 weights."""
    import numpy as np
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    prev, dim = "x", features
    for i in range(layers):
        out_dim = width if i < layers - 1 else features
        w = (rng.standard_normal((dim, out_dim)) / np.sqrt(dim)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"h{i}"]))
        prev, dim = f"h{i}", out_dim
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", features])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["B", features])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


# -- the child process -------------------------------------------------------------------------


def measure_child(job: dict[str, Any], workdir: Any, phase: Any) -> dict[str, Any]:
    """Runs in a fresh process started by the tuner's own isolation: build the session, time
    it, return a plain dict."""
    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = job.get("threads", 1)
    for key, value in job.get("config", {}).items():
        so.add_session_config_entry(key, value)
    sess = ort.InferenceSession(job["model"], so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((job["batch"], 512)).astype(np.float32)
    feeds = {"x": x}
    run = sess.run
    phase("measure")

    def time_calls(n: int) -> int:
        t = time.perf_counter_ns()
        for _ in range(n):
            run(None, feeds)
        return time.perf_counter_ns() - t

    if job["mode"] == "fixed":  # trtexec: warm-up by time, then a fixed window, mean
        end = time.perf_counter() + job["warmup_s"]
        while time.perf_counter() < end:
            time_calls(1)
        times = []
        end = time.perf_counter() + job["window_s"]
        while time.perf_counter() < end or len(times) < 10:
            times.append(time_calls(1) / 1e6)
        return {"mean_ms": float(np.mean(times)), "samples_ms": times}
    from gptuner_core.measurement import SamplingSettings
    from gptuner_core.measurement import measure

    r = measure(time_calls, SamplingSettings(**job["settings"]))
    return {
        "mean_ms": r.stats.mean_ms,
        "median_ms": r.stats.median_ms,
        "samples_ms": list(r.samples_ms),
        "stop_reason": r.stats.stop_reason,
        "busy": r.telemetry["busy"],
    }


def run_fresh(job: dict[str, Any], start_method: str | None = None) -> dict[str, Any]:
    """Run one measurement job in a fresh process, started as the tuner starts its candidates
    (``engine.process.isolation.run_isolated``: on Linux a fork of the pre-imported launcher for an
    ONNX Runtime job, as in a real study, unless ``start_method`` names another), and return
    its result dict."""
    import shutil

    from gptuner_core.engine.process.isolation import run_isolated

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)  # the child imports this module by name
    workdir = Path(tempfile.mkdtemp(prefix="gptuner-bench-"))
    try:
        out = run_isolated(
            "aa_false_winners:measure_child",
            {**job, "backend": "onnxruntime"},
            workdir,
            timeouts={"start": 120, "build": 120, "measure": 120, "profile": 120},
            start_method=start_method,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if out.status != "ok" or out.result is None:
        raise RuntimeError(f"measurement child failed: {out.status}: {out.error}")
    return out.result


# -- the two methods ---------------------------------------------------------------------------


def trtexec_method(routes: list[dict[str, Any]], window_s: float) -> dict[str, Any]:
    """One fixed-window measurement per route (fresh process each); the lowest mean wins."""
    t0 = time.perf_counter()
    means = [
        run_fresh({**r, "mode": "fixed", "warmup_s": 0.2, "window_s": window_s})["mean_ms"]
        for r in routes
    ]
    best = min(range(len(routes)), key=lambda i: means[i])
    return {
        "winner": best if best != 0 else None,
        "claimed": means[0] / means[best],
        "spread": max(means) / min(means),
        "wall_s": time.perf_counter() - t0,
    }


def contenders(medians: dict[int, float], default: int, k: int, margin: float | None) -> list[int]:
    """Top-k non-default routes by median (the tuner's rule: ``engine.decide.finish`` re-validates the
    top ``--revalidate-top-k``), keeping only those within ``margin`` of the best when a margin is
    given (a route screened more than ``margin`` slower than the best is not re-validated)."""
    from gptuner_core.measurement import rank
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState
    from gptuner_core.records import LatencyStats

    recs = [
        CandidateRecord(
            number=i,
            requested_route="",
            state=CandidateState.COMPLETE,
            latency=LatencyStats(
                median_ms=m,
                mean_ms=m,
                min_ms=m,
                p5_ms=m,
                p95_ms=m,
                p99_ms=m,
                cv=0.0,
                ci_low_ms=m,
                ci_high_ms=m,
                n_samples=1,
            ),
        )
        for i, m in medians.items()
    ]
    top = rank(recs, k=k, exclude=[default])
    if margin is None:
        return top
    best = min(medians[i] for i in top)
    return [i for i in top if medians[i] <= best * (1 + margin)]


def our_method(
    routes: list[dict[str, Any]],
    *,
    screen: dict[str, Any],
    recheck: dict[str, Any],
    plan: dict[str, Any] | None = None,
    k: int = 3,
    margin: float | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Adaptive screening of every route, then sequential re-validation of the contenders."""
    from gptuner_core.measurement import SequentialPlan
    from gptuner_core.measurement import revalidate_sequential

    t0 = time.perf_counter()
    screened = {
        i: run_fresh({**r, "mode": "adaptive", "settings": screen}) for i, r in enumerate(routes)
    }
    medians = {i: s["median_ms"] for i, s in screened.items()}
    top = contenders(medians, 0, k, margin)
    t_screen = time.perf_counter() - t0

    def measure_fresh(number: int, round_index: int) -> list[float]:
        return run_fresh({**routes[number], "mode": "adaptive", "settings": recheck})["samples_ms"]

    res = revalidate_sequential(top, 0, measure_fresh, SequentialPlan(**(plan or {})), seed=seed)
    best = res.contender(res.best).estimate if res.best is not None else None
    return {
        "winner": res.winner,
        "verdict": res.verdict.value,
        "rounds": res.rounds,
        "processes": sum(len(r) for r in res.schedule),
        "revalidated": top,
        "best": res.best,
        "best_est": best,
        "message": res.message,
        "screen_s": t_screen,
        "wall_s": time.perf_counter() - t0,
        "busy": sum(bool(s["busy"]) for s in screened.values()),
        "not_converged": sum(s["stop_reason"] != "converged" for s in screened.values()),
    }


def describe(est: Any) -> str:
    """``1.012x [0.981, 1.044]`` (or the point with "no CI")."""
    if est is None:
        return "-"
    if est.ci is None:
        return f"{est.point:.3f}x (no CI)"
    return f"{est.point:.3f}x [{est.low:.3f}, {est.high:.3f}]"


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    """The sequential re-validation's options, shared by the benchmarks."""
    p.add_argument("--min-rounds", type=int, default=4)
    p.add_argument("--max-rounds", type=int, default=20, help="round budget (20)")
    p.add_argument("--max-time-s", type=float, default=None, help="time budget of re-validation")
    p.add_argument("--spending", default="pocock", choices=["pocock", "obrien-fleming"])
    p.add_argument("--min-effect", type=float, default=0.01)
    p.add_argument("--load", type=int, default=0, help="competing CPU-bound processes (0)")


def plan_from(args: argparse.Namespace) -> dict[str, Any]:
    return {"min_rounds": args.min_rounds, "max_rounds": args.max_rounds,
            "max_time_s": args.max_time_s, "spending": args.spending,
            "min_effect": args.min_effect}


def settings_for(quick: bool, screen_max_s: float) -> tuple[dict[str, Any], dict[str, Any]]:
    """Screening and re-validation sampling settings (dicts for the child)."""
    from gptuner_core.engine.evaluate.rounds import ROUND_SCALE
    from gptuner_core.measurement import SamplingSettings

    screen = SamplingSettings(max_time_s=screen_max_s, gpu_index=None)
    if quick:
        screen = screen.scaled(0.5)
    recheck = screen.scaled(ROUND_SCALE)  # as the tuner's rounds measure (engine.evaluate.rounds)
    return screen.to_json(), recheck.to_json()


def main(argv: list[str] | None = None) -> int:
    from _load import competing_load

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=20, help="studies to run (default 20)")
    p.add_argument("--quick", action="store_true", help="3 studies, shorter windows")
    p.add_argument("--routes", type=int, default=4, help="routes per study, all equivalent (4)")
    p.add_argument("--window", type=float, default=1.0, help="trtexec-style window, s (1.0)")
    p.add_argument("--screen-max-s", type=float, default=3.0, help="cap on adaptive screening, s")
    p.add_argument("--batch", type=int, default=16)
    add_plan_arguments(p)
    args = p.parse_args(argv)
    repeats = 3 if args.quick and "--repeats" not in (argv or sys.argv) else args.repeats
    window = args.window / 2 if args.quick else args.window
    screen, recheck = settings_for(args.quick, args.screen_max_s)
    plan = plan_from(args)

    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    with tempfile.TemporaryDirectory() as tmp, competing_load(args.load) as load_pids:
        model = str(build_mlp(Path(tmp) / "mlp.onnx", width=512))
        routes = [{"model": model, "batch": args.batch, "threads": 1, "config": {}}]
        routes += [
            {
                "model": model,
                "batch": args.batch,
                "threads": 1,
                "config": {"gptuner.aa_route": str(i)},
            }
            for i in range(1, args.routes)
        ]
        print(
            f"{args.routes} equivalent routes (MLP 4x MatMul+Relu 512, batch {args.batch}, 1 thread), "
            f"{repeats} studies, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
            f"competing CPU-bound processes: {len(load_pids)}; re-validation plan {plan}"
        )
        header = (
            "| study | trtexec winner | trtexec claims | spread of means | trtexec s "
            "| ours re-validated | ours verdict | ours rounds | ours best (CI) | ours s |"
        )
        print(header)
        print("|" + "---|" * 10)
        t_fp = o_fp = o_inc = 0
        t_wall = o_wall = 0.0
        for study in range(repeats):
            t = trtexec_method(routes, window)
            o = our_method(routes, screen=screen, recheck=recheck, plan=plan, seed=study)
            t_fp += t["winner"] is not None
            o_fp += o["winner"] is not None
            o_inc += o["verdict"] == "inconclusive"
            t_wall += t["wall_s"]
            o_wall += o["wall_s"]
            won = f" #{o['winner']}" if o["winner"] is not None else ""
            print(
                f"| {study} | {'#' + str(t['winner']) if t['winner'] is not None else '-'} "
                f"| {t['claimed']:.3f}x | {t['spread']:.3f}x | {t['wall_s']:.1f} "
                f"| {o['revalidated']} | {o['verdict']}{won} | {o['rounds']} "
                f"| #{o['best']} {describe(o['best_est'])} | {o['wall_s']:.1f} |",
                flush=True,
            )
        print()
        print(f"false winners, trtexec's method (lowest single mean): {t_fp} / {repeats}")
        print(f"false winners, ours (adaptive + sequential re-validation): {o_fp} / {repeats}")
        print(f"ours inconclusive (equal routes, not measured to +-{args.min_effect:.0%}): "
              f"{o_inc} / {repeats}")
        print(
            f"mean wall time per study: trtexec {t_wall / repeats:.1f} s, ours {o_wall / repeats:.1f} s"
        )
        target = max(1, round(repeats / 20))
        print(
            f"target for ours: <= {target} in {repeats}: {'MET' if o_fp <= target else 'MISSED'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
