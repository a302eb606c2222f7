"""Kernel Tuner's own strategies on the same spaces, beside gptuner's (issue 28's reference).

Issue 28 sets its targets after Kernel Tuner's Bayesian-optimisation papers. This runs the
methods of Kernel Tuner itself (``kernel_tuner.tune_cache``: its simulation mode, the way those
papers and the FAIR benchmark hub replay a brute-forced cache) on every space of the development
set, seeds 0..N-1, ``max_fevals`` evaluations each, and scores them exactly as
``search_scale.py`` scores gptuner's: per run the best configuration among its first ``k``
distinct evaluations, as a fraction of the optimum (median of the raw runtimes, as the imported
recording's speed-ups). ``--ours auto,random`` puts gptuner's strategies through
``search_scale.run_space`` on the same spaces and seeds in the same table; with
``--ours-count in_space`` their budgets count, as Kernel Tuner's, only routes in the space.

Kernel Tuner is given more than gptuner: ``tune_cache`` infers the search space from the cache,
so its strategies only ever propose configurations that are in the file (they cannot spend an
evaluation on an infeasible one; a configuration that failed is still in the file and counts as
an evaluation). gptuner's strategies learn that by building: the "failed" column says what
share of their builds went to failed or infeasible routes.

    .venv/bin/pip install -e '.[reference]'   # kernel_tuner (and its numpy/scipy/pymoo)
    .venv/bin/python benchmarks/kerneltuner_reference.py --seeds 20 --ours auto,random \\
        [--strategies bayes_opt,genetic_algorithm] [-o bayes_opt.method=multi-advanced] \\
        [--spaces convolution_milo_A100] [--json F]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path


for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

STRATEGIES = ("bayes_opt", "genetic_algorithm", "simulated_annealing", "diff_evo", "pso",
              "firefly_algorithm", "basinhopping", "dual_annealing", "greedy_ils", "mls",
              "random_sample")


def kt_run(cache_path: Path, keys: list[str], median: dict, strategy: str, seed: int,
           budget: int, options: dict) -> list[float]:
    """Per distinct evaluation, in the order Kernel Tuner made them: the configuration's median
    runtime (``inf`` for a configuration that failed)."""
    import random

    import kernel_tuner
    import numpy as np

    # tune_cache's seed does not reach the strategies' draws (Python's and numpy's global
    # generators, and bayes_opt's Latin hypercube, which draws fresh entropy): seed all three,
    # so that a seed is one reproducible run
    random.seed(seed)
    np.random.seed(seed)
    from kernel_tuner.strategies import bayes_opt
    from scipy.stats.qmc import LatinHypercube

    bayes_opt.LatinHypercube = lambda d, **kw: LatinHypercube(d=d, rng=seed, **kw)
    results, _ = kernel_tuner.tune_cache(str(cache_path), strategy=strategy, seed=seed,
                                         strategy_options={**options, "max_fevals": budget},
                                         quiet=True)
    seen: dict[str, float] = {}
    for r in results:
        key = ",".join(str(r[p]) for p in keys)
        seen.setdefault(key, median.get(key, float("inf")))
    return list(seen.values())


def kt_space(space: str, strategies, seeds: int, budget: int, budgets, workdir: Path,
             options: dict) -> dict:
    from _kt_space import DATA
    from search_scale import progress
    from search_scale import summarise

    cache = json.loads(gzip.open(DATA / f"{space}.json.gz").read())
    path = workdir / f"{space}.json"  # tune_cache reads an uncompressed file
    path.write_text(json.dumps(cache))
    keys = cache["tune_params_keys"]
    median = {k: statistics.median(v["times"]) for k, v in cache["cache"].items()
              if isinstance(v["time"], (int, float))}
    optimum = min(median.values())
    out = {}
    for name in strategies:
        t0 = time.perf_counter()
        fr, fails, short = [], [], 0
        for seed in range(seeds):
            times = kt_run(path, keys, median, name, seed, budget, options.get(name, {}))[:budget]
            short += len(times) < budget
            fr.append([optimum / min(times[:b]) if times else 0.0 for b in budgets])
            fails.append(sum(t == float("inf") for t in times) / max(1, len(times)))
        per = summarise(fr, fails, budgets, time.perf_counter() - t0)
        per["stopped_early"] = short
        label = f"kt:{name}" + "".join(f" {k}={v}" for k, v in options.get(name, {}).items())
        out[label] = per
        print(progress(f"{space} {label}", per, budgets)
              + (f"  ({short} runs stopped before {budget})" if short else ""), file=sys.stderr)
    return out


#: the strategies issue 40 picks Kernel Tuner's best from, per space and budget, after the fact
BEST_OF = ("bayes_opt", "genetic_algorithm", "firefly_algorithm", "pso", "dual_annealing",
           "simulated_annealing")
STORED = ROOT / "benchmarks" / "data" / "results_kerneltuner_reference.json"


def kt_best(per: dict, budget: int) -> tuple[float, str, float, str]:
    """Kernel Tuner's best mean and best worst seed at ``budget`` among ``BEST_OF`` (any options),
    each with the strategy that reached it."""
    rows = [(label, r[str(budget)]) for label, r in per.items()
            if label.startswith("kt:") and label[3:].split()[0] in BEST_OF and str(budget) in r]
    mean = max(rows, key=lambda lr: lr[1]["mean"])
    worst = max(rows, key=lambda lr: lr[1]["min"])
    return mean[1]["mean"], mean[0], worst[1]["min"], worst[0]


def versus(results: dict, ours: str, budgets=(50, 200)) -> str:
    """Issue 40's table: ``ours`` (every build counted) against Kernel Tuner's best, per space and
    budget: mean and worst seed (% of the optimum), the failed share, and whether each is at or
    above Kernel Tuner's."""
    lines = [f"| space | builds | {ours} mean | KT best mean | {ours} worst | KT best worst | "
             f"{ours} failed | mean ≥ | worst ≥ |", "|---|---|---|---|---|---|---|---|---|"]
    tally = [0, 0, 0]
    for space, per in results.items():
        if ours not in per:
            continue
        r = per[ours]
        for b in budgets:
            if str(b) not in r:
                continue
            km, km_by, kw, kw_by = kt_best(per, b)
            m, w = r[str(b)]["mean"], r[str(b)]["min"]
            ok_m, ok_w = m >= km - 1e-9, w >= kw - 1e-9
            tally[0] += 1
            tally[1] += ok_m
            tally[2] += ok_w
            lines.append(f"| {space} | {b} | {100 * m:.1f} | {100 * km:.1f} ({km_by[3:]}) | "
                         f"{100 * w:.1f} | {100 * kw:.1f} ({kw_by[3:]}) | "
                         f"{100 * r['failed_share']:.0f}% | {'yes' if ok_m else 'no'} | "
                         f"{'yes' if ok_w else 'no'} |")
    lines.append(f"\n{ours}: mean at or above Kernel Tuner's best in {tally[1]} of {tally[0]} cells, "
                 f"worst seed at or above in {tally[2]} of {tally[0]}")
    return "\n".join(lines)


def _json_or_text(value: str):
    """A Kernel Tuner option value: a number, list or boolean as JSON, else the text itself."""
    try:
        return json.loads(value)
    except ValueError:
        return value


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--budget", type=int, default=200)
    p.add_argument("--strategies", default=",".join(STRATEGIES), help="Kernel Tuner's strategies")
    p.add_argument("--ours", default="", help="gptuner strategies in the same table (e.g. auto)")
    p.add_argument("--ours-count", choices=("builds", "in_space"), default="builds",
                   help="in_space: our budgets count only routes in the space (measured or failed), "
                   "as Kernel Tuner's evaluations; infeasible proposals are free")
    p.add_argument("--spaces", default="")
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("-o", action="append", default=[], metavar="STRATEGY.KEY=VALUE",
                   help="a Kernel Tuner strategy option (repeatable), e.g. bayes_opt.method=multi")
    p.add_argument("--kt-stored", type=Path, nargs="?", const=STORED, default=None,
                   help="take Kernel Tuner's results from this stored run instead of running it "
                   f"(default file: {STORED.relative_to(ROOT)}); used when kernel_tuner is missing")
    p.add_argument("--ours-options", action="append", default=[], metavar="STRATEGY.KEY=VALUE",
                   help="a gptuner strategy option (repeatable), e.g. auto.switch_at=100")
    a = p.parse_args()
    if a.kt_stored is None:
        try:
            import kernel_tuner  # noqa: F401
        except ImportError:
            if not STORED.exists():
                print("kerneltuner_reference.py: error: kernel_tuner is not installed "
                      "(expected: .venv/bin/pip install -e '.[reference]', or --kt-stored FILE)",
                      file=sys.stderr)
                return 2
            a.kt_stored = STORED
            print(f"kernel_tuner is not installed: its results are read from {STORED.name}",
                  file=sys.stderr)
    stored = json.loads(a.kt_stored.read_text())["results"] if a.kt_stored else None
    from _kt_space import SPACES
    from _kt_space import load_kt
    from search_scale import BUDGETS
    from search_scale import parse_options
    from search_scale import run_space
    from search_scale import table

    options = parse_options(a.o, _json_or_text)
    ours_options = parse_options(a.ours_options, _json_or_text)

    warnings.simplefilter("ignore")
    budgets = [b for b in BUDGETS if b <= a.budget] or [a.budget]
    spaces = [s for s in (a.spaces or ",".join(SPACES)).split(",") if s]
    ours = [s for s in a.ours.split(",") if s]
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for space in spaces:
            if stored is not None:
                results[space] = {k: v for k, v in stored.get(space, {}).items()
                                  if k.startswith("kt:")}
            else:
                results[space] = kt_space(space, [s for s in a.strategies.split(",") if s],
                                          a.seeds, a.budget, budgets, Path(tmp), options)
            if ours:
                per = run_space(load_kt(space), ours, a.seeds, a.budget, label=space,
                                count=a.ours_count, options=ours_options)
                suffix = "" if a.ours_count == "builds" else " (in space)"
                results[space].update({f"{k}{suffix}": v for k, v in per.items()})
    print(table(results, budgets))
    for name in ours:
        label = name if a.ours_count == "builds" else f"{name} (in space)"
        if all(any(k.startswith("kt:") for k in per) for per in results.values()):
            print()
            print(versus(results, label, [b for b in (50, 200) if b <= a.budget]))
    if a.json:
        a.json.write_text(json.dumps({"seeds": a.seeds, "budget": a.budget, "results": results},
                                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
