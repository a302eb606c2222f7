"""Where ``auto`` should switch: ``fast_tpe`` against ``hybrid`` on spaces of every size.

Each Kernel Tuner space of the development set (``/work/shared/data/kerneltuner``) is searched
whole and with its last 1, 2, ... tunable parameters held at their first listed value (the same
kernel with fewer knobs tuned: 31 to 22,272 routes). Per space, both strategies run seeds
0..N-1 through the real harness (:func:`gptuner_core.engine.loop.simulate.simulate`) with a budget of
20 % of the space capped at 200 builds; reported: mean / worst fraction of that space's optimum
at the budget.

    .venv/bin/python benchmarks/search_crossover.py --seeds 10 [--spaces convolution_milo_A100]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import warnings
from pathlib import Path


for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    from _kt_space import SPACES
    from _kt_space import load_kt
    from search_scale import curve

    from gptuner_core.engine.loop.simulate import simulate

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--strategies", default="fast_tpe,hybrid")
    p.add_argument("--spaces", default=",".join(SPACES))
    p.add_argument("--min-size", type=int, default=30)
    p.add_argument("--json", type=Path, help="merge the results into this JSON file")
    a = p.parse_args()
    warnings.simplefilter("ignore")
    names = [s for s in a.strategies.split(",") if s]
    out: dict = {}
    for space in [s for s in a.spaces.split(",") if s]:
        for fixed in range(8):
            rec = load_kt(space, fixed)
            size = rec.expression.count("full")
            if size < a.min_size:
                break
            budget = min(200, math.ceil(0.2 * size))
            opt, _ = rec.optimum()
            row = {"space": space, "fixed": fixed, "size": size, "budget": budget}
            for name in names:
                t0 = time.perf_counter()
                got = [curve(simulate(name, rec, budget, seed=s, budget_fraction=0.0), [budget])[0]
                       / opt for s in range(a.seeds)]
                row[name] = {"mean": statistics.fmean(got), "min": min(got),
                             "seconds": time.perf_counter() - t0}
            out[f"{space}-{fixed}"] = row
            print(f"| {space} | {fixed} | {size} | {budget} | " + " | ".join(
                f"{100 * row[n]['mean']:.1f} / {100 * row[n]['min']:.1f}" for n in names) + " |",
                flush=True)
    if a.json:
        old = json.loads(a.json.read_text()) if a.json.exists() else {}
        old.setdefault("crossover", {}).update(out)
        old["crossover_seeds"] = a.seeds
        a.json.write_text(json.dumps(old, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
