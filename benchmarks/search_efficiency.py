"""Search efficiency on recorded FULL sweeps: fraction of the exhaustive optimum reached.

For every recording under ``benchmarks/data/*_full.json`` (real ONNX Runtime sweeps made by
``benchmarks/record_sweep.py``) and every strategy, replay 20 seeds with
:func:`gptuner_core.recording.simulate` up to the largest budget; a strategy never sees the budget,
so the best speed-up after ``k`` builds of that one run *is* the result of a run with budget
``k``. Reports, per budget (5-50 % of the space), the mean and the worst fraction of the
exhaustive optimum's speed-up, and checks the default strategy against its target
(>= 97 % of the optimum with <= 20 % of the builds, and at least as good as fast, mixed and plain
TPE on every space).

    .venv/bin/python benchmarks/search_efficiency.py [--seeds 20] [--strategies a,b] [--json out]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BUDGETS = (0.05, 0.10, 0.20, 0.30, 0.50)
DETERMINISTIC = {"fast", "full", "mixed", "mixed_noise"}


def best_at(result, builds: int) -> float:
    best = 0.0
    for step in result.trace:
        if step.builds > builds:
            break
        best = step.best_speedup
    return best


def run(recordings: list[Path], strategies: list[str], seeds: int) -> dict:
    from gptuner_core.engine.loop.simulate import simulate
    from gptuner_core.recording import load_recording

    out: dict = {}
    for path in recordings:
        rec = load_recording(path)
        size = rec.expression.count("full")
        opt, opt_rec = rec.optimum()
        budgets = [math.ceil(b * size) for b in BUDGETS]
        space = {"size": size, "optimum": opt, "optimum_route": opt_rec.requested_route,
                 "budgets": budgets, "strategies": {}}
        for name in strategies:
            t0 = time.perf_counter()
            fractions: dict[int, list[float]] = {b: [] for b in budgets}
            used: dict[int, list[int]] = {b: [] for b in budgets}
            for seed in range(1 if name in DETERMINISTIC else seeds):
                opts = {"budget_fraction": 0.0} if name in ("fast_tpe", "bo", "hybrid", "auto") else {}  # budget k
                res = simulate(name, rec, max(budgets), seed=seed, **opts)
                assert not res.duplicates, (name, res.duplicates)
                for b in budgets:
                    fractions[b].append(best_at(res, b) / opt)
                    used[b].append(min(b, res.builds_used))
            space["strategies"][name] = {
                str(b): {"mean": statistics.fmean(fractions[b]), "min": min(fractions[b]),
                         "builds": statistics.fmean(used[b])}
                for b in budgets
            }
            space["strategies"][name]["seconds"] = time.perf_counter() - t0
            print(f"  {path.stem} {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        out[path.stem] = space
    return out


def table(results: dict) -> str:
    lines = []
    for stem, space in results.items():
        budgets = space["budgets"]
        lines.append(f"\n### {stem}: {space['size']} routes, optimum {space['optimum']:.3f}x "
                     f"({space['optimum_route']})\n")
        head = " | ".join(f"{int(round(100 * b / space['size']))}% ({b})" for b in budgets)
        lines.append(f"| strategy | {head} |")
        lines.append("|---|" + "---|" * len(budgets))
        for name, per in space["strategies"].items():
            cells = " | ".join(
                f"{per[str(b)]['mean']:.3f} / {per[str(b)]['min']:.3f}"
                + (f" ({per[str(b)]['builds']:.0f} b)" if per[str(b)]["builds"] < b else "")
                for b in budgets
            )
            lines.append(f"| {name} | {cells} |")
    lines.append("\ncells: mean / worst fraction of the optimum's speed-up over the seeds "
                 "((N b) = the strategy stopped after N builds)")
    return "\n".join(lines)


def verdict(results: dict, default: str) -> list[str]:
    msgs = []
    for stem, space in results.items():
        per = space["strategies"]
        if default not in per:
            continue
        b20 = space["budgets"][2]
        d = per[default][str(b20)]
        ok = d["mean"] >= 0.97
        msgs.append(f"{stem}: {default} at 20% = {d['mean']:.3f} mean / {d['min']:.3f} worst "
                    f"-> {'meets' if ok else 'MISSES'} the 97% target")
        for other in ("fast", "mixed", "tpe"):
            if other in per:
                o = per[other][str(b20)]["mean"]
                msgs.append(f"  vs {other}: {o:.3f} ({'>=' if d['mean'] >= o else 'WORSE'})")
    return msgs


def main() -> int:
    from gptuner_core.strategies import DEFAULT_STRATEGY
    from gptuner_core.strategies import strategy_names

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=20)
    p.add_argument("--strategies", default=",".join(strategy_names()))
    p.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data")
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    names = [s for s in a.strategies.split(",") if s and s != "full"]
    recordings = sorted(a.data.glob("*_full.json"))
    if not recordings:
        print(f"no recordings under {a.data}", file=sys.stderr)
        return 1
    results = run(recordings, names, a.seeds)
    print(table(results))
    print()
    print("\n".join(verdict(results, DEFAULT_STRATEGY)))
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
