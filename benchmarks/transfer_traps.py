"""Where ``transfer_spread`` costs (issue 40 item 4): a synthetic source and a target that
agrees with it up to a wiggle, except one route, the target's optimum, that the source ranks
``RANK``-th. ``bo`` with the source as its prior, 40 builds, 6 seeds, ``transfer_spread`` 0
(the old model) against 0.5 (the default): mean / worst fraction of the target's optimum.

The space is the one of ``tests/strategies_tests/test_bo.py`` (4 knobs, 512 routes, a smooth
bowl, about half infeasible or failing); the target's latency is the source's times
``exp(wiggle * sin(7.3 n))`` (route number ``n``), and the trap route's also times
``exp(-depth)``, ``depth`` 0.2 beyond its ratio to the source's optimum.

    .venv/bin/python benchmarks/transfer_traps.py [--wiggle 0.15 0.3] [--rank 40 90 130]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import warnings
from pathlib import Path


os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KNOBS = {"-s:a": [str(v) for v in range(8)], "-s:b": [str(v) for v in range(8)],
         "-s:c": ["1", "2", "3", "4"], "-s:d": ["off", "on"]}


def latency(a: int, b: int, c: int, d: str) -> float:
    return 1.0 + 0.08 * (a - 5) ** 2 + 0.1 * (b - 2) ** 2 + 0.2 * abs(c - 3) + (0.0 if d == "on" else 0.5)


def feasible(a: int, b: int, c: int, d: str) -> bool | None:
    if a + b > 7:
        return None
    return not (d == "on" and c == 4)


def make(trap=None, depth: float = 0.0, wiggle: float = 0.0):
    from tests.strategies_tests.synthetic import synthetic_recording

    def outcome(n, v):
        a, b, c, d = int(v[0]), int(v[1]), int(v[2]), v[3]
        ok = feasible(a, b, c, d)
        if not ok:
            return ok
        x = latency(a, b, c, d) * math.exp(wiggle * math.sin(7.3 * n))
        return x * math.exp(-depth) if (a, b, c, d) == trap else x
    return synthetic_recording(KNOBS, outcome)


def main() -> int:
    from gptuner_core.engine.loop.simulate import simulate
    from gptuner_core.strategies.warm_start import load_prior

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wiggle", type=float, nargs="+", default=[0.05, 0.15, 0.3])
    p.add_argument("--rank", type=int, nargs="+", default=[40, 90, 130])
    p.add_argument("--builds", type=int, default=40)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    routes = sorted((r for r in ((x, y, c, d) for x in range(8) for y in range(8)
                                 for c in (1, 2, 3, 4) for d in ("off", "on")) if feasible(*r)),
                    key=lambda r: latency(*r))
    source = make()
    print("| wiggle | trap's rank in the source | transfer_spread 0 | transfer_spread 0.5 |")
    print("|---|---|---|---|")
    for wiggle in a.wiggle:
        for rank in a.rank:
            trap = routes[rank]
            depth = math.log(latency(*trap) / latency(*routes[0])) + 0.2
            target = make(trap, depth, wiggle)
            prior = load_prior([source], target.expression)
            cells = []
            for spread in (0.0, 0.5):
                got = [simulate("bo", target, a.builds, seed=s, budget_fraction=0.0, prior=prior,
                                transfer_spread=spread).found_optimum_fraction for s in range(6)]
                cells.append(f"{100 * statistics.fmean(got):.1f} / {100 * min(got):.1f}")
            print(f"| {wiggle} | {rank + 1} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
