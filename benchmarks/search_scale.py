"""Search at scale (issue 28): strategies on real brute-forced Kernel Tuner spaces.

Every space of the development set (``/work/shared/data/kerneltuner``, 4k-22k routes, about half
infeasible) is replayed through the real harness (:func:`gptuner_core.engine.loop.simulate.simulate`:
the tuning loop, the recorded evaluator, a strategy sees a route's result only after asking for
it). Per strategy and seed 0..N-1, one run of ``--budget`` builds; the best recorded speed-up after
``k`` builds of that run is the result of a run with budget ``k`` (a strategy never sees the
budget: ``budget_fraction`` is 0). Fraction of optimum = optimum time / best found time.

Reports per space and budget (20/50/100/200 builds) mean / worst over seeds, the share of builds
spent on failed or infeasible routes, and ``--warm`` transfer runs (``SRC:DST``: the strategy
gets the whole source recording as its prior, ``--warm-budget`` builds) with the Spearman rank
correlation of the routes both spaces measured.

    .venv/bin/python benchmarks/search_scale.py --seeds 20 --strategies bo,random \\
        --spaces convolution_milo_A100 [--warm convolution_milo_A100:convolution_milo_A4000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path


for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # small matrices: threads only contend
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

BUDGETS = (20, 50, 100, 200)


def _best_after(steps, positions, budgets) -> list[float]:
    """Best recorded speed-up of the steps up to each budget (``positions``: each step's count)."""
    out, best, i = [], 0.0, 0
    for b in budgets:
        while i < len(steps) and positions[i] <= b:
            best = steps[i].best_speedup
            i += 1
        out.append(best)
    return out


def curve(result, budgets) -> list[float]:
    """Best recorded speed-up after each budget (builds) of one run's trace."""
    steps = list(result.trace)
    return _best_after(steps, [s.builds for s in steps], budgets)


def curve_in_space(result, rec, budgets) -> list[float]:
    """Best recorded speed-up after each budget counted in routes of the space (measured or
    failed, as Kernel Tuner counts evaluations): infeasible proposals are not counted."""
    from itertools import accumulate

    steps = [s for s in result.trace if not s.remeasure]
    counts = accumulate(rec.lookup(s.route) is not None for s in steps)
    return _best_after(steps, list(counts), budgets)


def failed_share(result, budget: int) -> float:
    steps = [s for s in result.trace if not s.remeasure and s.builds <= budget]
    return sum(s.state != "COMPLETE" for s in steps) / max(1, len(steps))


def run_space(rec, names, seeds, budget, *, prior=None, label="", options=None, first=0,
              count="builds") -> dict:
    """``count="in_space"``: budgets count only proposals of routes in the space (runs go on to
    2 x ``budget`` builds so that every budget is reached)."""
    from gptuner_core.engine.loop.simulate import simulate

    opt, _ = rec.optimum()
    budgets = [b for b in BUDGETS if b <= budget] or [budget]
    out = {}
    for name in names:
        t0 = time.perf_counter()
        fr: list[list[float]] = []
        fails: list[float] = []
        for seed in range(first, first + seeds):
            opts = {"budget_fraction": 0.0} if name in ("fast_tpe", "bo", "hybrid", "auto") else {}
            opts.update((options or {}).get(name, {}))
            builds = budget if count == "builds" else 2 * budget
            res = simulate(name, rec, builds, seed=seed, prior=prior, **opts)
            assert not res.duplicates, (name, res.duplicates[:3])
            got = curve(res, budgets) if count == "builds" else curve_in_space(res, rec, budgets)
            fr.append([c / opt for c in got])
            fails.append(failed_share(res, budget))
        per = summarise(fr, fails, budgets, time.perf_counter() - t0)
        out[name] = per
        print(progress(f"{label} {name}", per, budgets) + f"  failed {per['failed_share']:.0%}",
              file=sys.stderr)
    return out


def summarise(fr: list[list[float]], fails: list[float], budgets, seconds: float) -> dict:
    """One strategy's seeds on one space: mean / worst fraction of the optimum per budget
    (``fr``: per seed, per budget), the mean failed share, how many different final results."""
    per: dict = {str(b): {"mean": statistics.fmean(r[k] for r in fr), "min": min(r[k] for r in fr)}
                 for k, b in enumerate(budgets)}
    per.update(failed_share=statistics.fmean(fails), distinct_results=len({round(r[-1], 9) for r in fr}),
               seconds=seconds)
    return per


def progress(label: str, per: dict, budgets) -> str:
    return (f"  {label}: {per['seconds']:.1f} s  "
            + "  ".join(f"{b}:{per[str(b)]['mean']:.3f}/{per[str(b)]['min']:.3f}" for b in budgets))


def parse_options(items: list[str], convert=lambda value: value) -> dict:
    """``-o STRATEGY.KEY=VALUE`` items as {strategy: {key: convert(value)}}."""
    options: dict = {}
    for item in items:
        target, _, value = item.partition("=")
        strategy, _, key = target.partition(".")
        options.setdefault(strategy, {})[key] = convert(value)
    return options


def rank_correlation(src, dst) -> tuple[float, int]:
    """Spearman correlation of the median latencies of the routes both recordings measured."""
    from scipy.stats import spearmanr

    a, b = src.by_key, dst.by_key
    shared = [(a[k].latency.median_ms, b[k].latency.median_ms) for k in a.keys() & b.keys()
              if a[k].eligible and b[k].eligible]
    rho = spearmanr([s for s, _ in shared], [d for _, d in shared]).statistic
    return float(rho), len(shared)


def table(results: dict, budgets) -> str:
    lines = ["| space | strategy | " + " | ".join(f"{b} builds" for b in budgets)
             + " | failed share | distinct |", "|---|---|" + "---|" * (len(budgets) + 2)]
    for space, per in results.items():
        for name, r in per.items():
            cells = " | ".join(f"{100 * r[str(b)]['mean']:.1f} / {100 * r[str(b)]['min']:.1f}"
                               if str(b) in r else "" for b in budgets)
            lines.append(f"| {space} | {name} | {cells} | {100 * r['failed_share']:.0f}% "
                         f"| {r['distinct_results']} |")
    return "\n".join(lines)


def main() -> int:
    from _kt_space import SPACES
    from _kt_space import load_kt

    from gptuner_core.strategies.warm_start import load_prior

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--first-seed", type=int, default=0,
                   help="seeds FIRST..FIRST+SEEDS-1 (held-out seeds: e.g. 20 with --seeds 20)")
    p.add_argument("--budget", type=int, default=200)
    p.add_argument("--strategies", default="bo,random")
    p.add_argument("--spaces", default=",".join(SPACES))
    p.add_argument("--warm", default="", help="SRC:DST,... transfer runs (whole source as prior)")
    p.add_argument("--warm-budget", type=int, default=50)
    p.add_argument("--json", type=Path, help="merge the results into this JSON file")
    p.add_argument("-o", action="append", default=[], metavar="STRATEGY.KEY=VALUE",
                   help="a strategy option (repeatable)")
    a = p.parse_args()
    warnings.simplefilter("ignore")
    names = [s for s in a.strategies.split(",") if s]
    options = parse_options(a.o)
    results: dict = {}
    for space in [s for s in a.spaces.split(",") if s]:
        results[space] = run_space(load_kt(space), names, a.seeds, a.budget, label=space,
                                   options=options, first=a.first_seed)
    warm: dict = {}
    for pair in [s for s in a.warm.split(",") if s]:
        src_name, dst_name = pair.split(":")
        src, dst = load_kt(src_name), load_kt(dst_name)
        rho, n = rank_correlation(src, dst)
        prior = load_prior([src], dst.expression)
        per = run_space(dst, names, a.seeds, a.warm_budget, prior=prior, label=pair, options=options,
                        first=a.first_seed)
        warm[pair] = {"spearman": rho, "shared": n, "strategies": per}
        print(f"  {pair}: Spearman {rho:.3f} over {n} shared measured routes", file=sys.stderr)
    if results:
        print(table(results, [b for b in BUDGETS if b <= a.budget]))
    for pair, w in warm.items():
        print(f"\nwarm {pair} (Spearman {w['spearman']:.3f}, {w['shared']} shared routes)")
        print(table({pair: w["strategies"]}, [b for b in BUDGETS if b <= a.warm_budget]))
    if a.json:
        old = json.loads(a.json.read_text()) if a.json.exists() else {"cold": {}, "warm": {}}
        for space, per in results.items():
            old["cold"].setdefault(space, {}).update(per)
        for pair, w in warm.items():
            entry = old["warm"].setdefault(pair, {"strategies": {}})
            entry.update({"spearman": w["spearman"], "shared": w["shared"]})
            entry["strategies"].update(w["strategies"])
        old["seeds"], old["budget"] = a.seeds, a.budget
        old["first_seed"] = a.first_seed
        a.json.write_text(json.dumps(old, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
