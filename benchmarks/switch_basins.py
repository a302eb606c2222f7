"""Where a one-off climb ends, per combination of switch values, on a brute-forced Kernel Tuner space.

Issue 40 item 3 (no seed stuck): a switch (a two-valued knob such as ``use_shmem``) often picks
a code path with basins of its own. For every measured configuration as a start, a steepest
one-off climb (each step to the fastest measured neighbour that changes one knob, until none is
faster) is run twice: keeping the switches (within the start's combination) and free. Printed per
combination: how many routes it has, its best as % of the optimum, and the ends of its climbs with
how many starts reach each (best four); then the free climb's best ends and their combination::

    .venv/bin/python benchmarks/switch_basins.py ../shared/data/kerneltuner/convolution_milo_A100.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import Counter
from collections.abc import Iterator


def load(path: str) -> tuple[list[str], dict[str, list], dict[tuple, float]]:
    """The tuned parameters (more than one value), their values, and each measured
    configuration's time (failed and absent configurations left out)."""
    doc = json.load(gzip.open(path))
    params = {k: v for k, v in doc["tune_params"].items() if len(v) > 1}
    names = list(params)
    times = {tuple(e[k] for k in names): float(e["time"]) for e in doc["cache"].values()
             if isinstance(e["time"], (int, float))}
    return names, params, times


def climb(start: tuple, names: list[str], params: dict[str, list], times: dict[tuple, float],
          fixed: set[int]) -> tuple:
    """The end of a steepest one-off climb from ``start`` that never changes the knobs ``fixed``."""

    def neighbours(r: tuple) -> Iterator[tuple]:
        for d, k in enumerate(names):
            if d not in fixed:
                for v in params[k]:
                    x = r[:d] + (v,) + r[d + 1:]
                    if v != r[d] and x in times:
                        yield x

    at = start
    while True:
        best = min(neighbours(at), key=times.__getitem__, default=None)
        if best is None or times[best] >= times[at]:
            return at
        at = best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache", help="a Kernel Tuner cache (.json.gz)")
    args = ap.parse_args()
    names, params, times = load(args.cache)
    optimum = min(times.values())
    switches = {d for d, k in enumerate(names) if len(params[k]) == 2}
    print(f"{len(times)} measured configurations; switches: {[names[d] for d in sorted(switches)]}")

    def pct(r: tuple) -> str:
        return f"{optimum / times[r] * 100:.1f}"

    combos: dict[tuple, list[tuple]] = {}
    for r in times:
        combos.setdefault(tuple(r[d] for d in sorted(switches)), []).append(r)
    for combo, routes in sorted(combos.items()):
        ends = Counter(climb(r, names, params, times, switches) for r in routes)
        top = sorted(ends.items(), key=lambda kv: times[kv[0]])[:4]
        best = min(routes, key=times.__getitem__)
        print(f"{combo}: {len(routes)} routes, best {pct(best)} %, {len(ends)} climb ends, "
              f"best ends (% of optimum, starts): {[(pct(e), n) for e, n in top]}")
    ends = Counter(climb(r, names, params, times, set()) for r in times)
    top = sorted(ends.items(), key=lambda kv: times[kv[0]])[:6]
    print(f"free climb: {len(ends)} ends; best (% of optimum, starts, switches): "
          f"{[(pct(e), n, tuple(e[d] for d in sorted(switches))) for e, n in top]}")


if __name__ == "__main__":
    main()
