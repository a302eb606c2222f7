"""Time to decision: adaptive sampling + re-validation vs a fixed 3-second-per-route loop.

A study of ``--routes`` routes where exactly one is really faster: the default and the equivalent
routes run an MLP of hidden width 512 (routes differ only by a session config entry ONNX Runtime
ignores), the fast route runs the same MLP with hidden width 432 (~22 % fewer flops, ~1.2-1.3x).
Every measurement runs in a FRESH spawned process.

* fixed loop: each route measured once for 3 s after a 200 ms warm-up; the lowest mean wins.
* ours: adaptive sampling per route (``SamplingSettings`` defaults, capped by ``--screen-max-s``),
  then SEQUENTIAL interleaved re-validation (fresh processes, ``revalidate_sequential``) of the
  contenders: the top-3 routes by screening median, as the tuner picks them (``--margin 0.15``
  keeps only those within 15 % of the best screened route, a rule the tuner does not have).
  Rounds continue until a winner's speed-up CI clears 1.01 (alpha spending keeps that valid), or
  every contender is "not faster", or the ``--max-rounds`` / ``--max-time-s`` budget ends it
  "inconclusive" (counted as a wrong decision here).

Decision quality: did the method name the truly faster route? Time: wall seconds per study.
Target: ours needs >= 2x less wall time at equal decision quality, quiet and with ``--load 1``
(one competing CPU-bound process, started and killed by the benchmark).

    .venv/bin/python benchmarks/time_to_decision.py                 # 3 studies of 12 routes
    .venv/bin/python benchmarks/time_to_decision.py --load 1        # the same under load
    .venv/bin/python benchmarks/time_to_decision.py --quick         # 1 study
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))

from _load import competing_load  # noqa: E402
from aa_false_winners import add_plan_arguments  # noqa: E402
from aa_false_winners import build_mlp  # noqa: E402
from aa_false_winners import describe  # noqa: E402
from aa_false_winners import our_method  # noqa: E402
from aa_false_winners import plan_from  # noqa: E402
from aa_false_winners import run_fresh  # noqa: E402


def fixed_loop(routes: list[dict], seconds: float) -> dict:
    """Each route once for ``seconds`` (fresh process), lowest mean wins."""
    t0 = time.perf_counter()
    means = [
        run_fresh({**r, "mode": "fixed", "warmup_s": 0.2, "window_s": seconds})["mean_ms"]
        for r in routes
    ]
    best = min(range(len(routes)), key=lambda i: means[i])
    return {"winner": best, "claimed": means[0] / means[best], "wall_s": time.perf_counter() - t0}


def main(argv: list[str] | None = None) -> int:
    from gptuner_core.engine.evaluate.rounds import ROUND_SCALE
    from gptuner_core.measurement import SamplingSettings

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="one study")
    p.add_argument("--routes", type=int, default=12, help="routes per study (12)")
    p.add_argument("--fast-width", type=int, default=432, help="hidden width of the fast route")
    p.add_argument("--fixed-s", type=float, default=3.0, help="fixed loop seconds per route (3)")
    p.add_argument("--screen-max-s", type=float, default=3.0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--margin", type=float, default=None,
                   help="re-validate only routes screened within this fraction of the best "
                        "(default: none, the tuner's top-3 rule)")
    add_plan_arguments(p)
    args = p.parse_args(argv)
    plan = plan_from(args)
    repeats = 1 if args.quick else args.repeats

    screen = SamplingSettings(max_time_s=args.screen_max_s, gpu_index=None)
    recheck = screen.scaled(ROUND_SCALE)  # as the tuner's rounds measure (engine.evaluate.rounds)
    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    with tempfile.TemporaryDirectory() as tmp, competing_load(args.load) as load_pids:
        slow = str(build_mlp(Path(tmp) / "w512.onnx", width=512))
        fast = str(build_mlp(Path(tmp) / "fast.onnx", width=args.fast_width))
        fast_index = args.routes // 2
        routes = []
        for i in range(args.routes):
            model = fast if i == fast_index else slow
            config = {} if i == 0 else {"gptuner.ttd_route": str(i)}
            routes.append({"model": model, "batch": args.batch, "threads": 1, "config": config})
        print(
            f"{args.routes} routes, route #{fast_index} really faster (width {args.fast_width} vs 512), "
            f"{repeats} studies, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
            f"competing CPU-bound processes: {len(load_pids)}; re-validation plan {plan}"
        )
        print(
            "| study | fixed winner | fixed claims | fixed s | ours re-validated | ours verdict (CI) "
            "| ours rounds (processes) | ours screen s | ours s | speed-up of decision |"
        )
        print("|" + "---|" * 10)
        f_ok = o_ok = 0
        f_wall = o_wall = 0.0
        for study in range(repeats):
            f = fixed_loop(routes, args.fixed_s)
            o = our_method(
                routes,
                screen=screen.to_json(),
                recheck=recheck.to_json(),
                plan=plan,
                k=3,
                margin=args.margin,
                seed=study,
            )
            f_ok += f["winner"] == fast_index
            o_ok += o["winner"] == fast_index
            f_wall += f["wall_s"]
            o_wall += o["wall_s"]
            won = f"#{o['winner']}" if o["winner"] is not None else o["verdict"]
            print(
                f"| {study} | #{f['winner']} | {f['claimed']:.3f}x | {f['wall_s']:.1f} | {o['revalidated']} "
                f"| {won} #{o['best']} {describe(o['best_est'])} | {o['rounds']} ({o['processes']}) | {o['screen_s']:.1f} "
                f"| {o['wall_s']:.1f} | {f['wall_s'] / o['wall_s']:.2f}x |",
                flush=True,
            )
        print()
        print(f"correct decisions: fixed loop {f_ok} / {repeats}, ours {o_ok} / {repeats}")
        print(
            f"mean wall time per study: fixed loop {f_wall / repeats:.1f} s, ours {o_wall / repeats:.1f} s"
        )
        ratio = f_wall / o_wall
        verdict = "MET" if ratio >= 2 and o_ok >= f_ok else "MISSED"
        print(f"time-to-decision ratio: {ratio:.2f}x (target >= 2x at equal quality): {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
