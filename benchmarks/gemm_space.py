"""A Kernel Tuner cache with the knobs and restrictions of Kernel Tuner's GEMM space (82,944
routes) and synthetic latencies: issue 40 item 5's cost at that size, where no such recording
exists here.

The knobs (CLBlast's Xgemm as Kernel Tuner's GEMM benchmark tunes it: ``MWG, NWG`` 16-128,
``MDIMC, NDIMC, MDIMA, NDIMB`` 8-32, ``VWM, VWN`` 1-8, ``SA, SB`` 0/1; ``KWG=32, KWI=2`` fixed) and
its seven restrictions are the real ones (e.g. ``MWG % (MDIMC * VWM) == 0``): configurations
that break one are absent from the cache, as in an exhaustive import. The latencies are a
model, not a GPU's: occupancy from the threads per block, register tiles ``MWG/MDIMC x
NWG/NDIMC`` best at 4-8, vector widths, the local-memory switches ``SA/SB`` helping larger tiles,
5 % lognormal noise per configuration; a register tile over 64 values fails at run time
(``RuntimeFailedConfig``). So the figures it serves are the strategy's and the replay's cost at
that size and shape, not search quality on a real GEMM::

    .venv/bin/python benchmarks/gemm_space.py /tmp/gemm_synthetic.json.gz
    .venv/bin/gptuner import --format kerneltuner /tmp/gemm_synthetic.json.gz --out /tmp/gemm.recording.json.gz
    /usr/bin/time -v .venv/bin/gptuner replay /tmp/gemm.recording.json.gz --budget 200 --seeds 10
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import random
from pathlib import Path


TUNE_PARAMS = {
    "MWG": [16, 32, 64, 128], "NWG": [16, 32, 64, 128], "KWG": [32],
    "MDIMC": [8, 16, 32], "NDIMC": [8, 16, 32], "MDIMA": [8, 16, 32], "NDIMB": [8, 16, 32],
    "KWI": [2], "VWM": [1, 2, 4, 8], "VWN": [1, 2, 4, 8], "STRM": [0], "STRN": [0],
    "SA": [0, 1], "SB": [0, 1], "PRECISION": [32],
}


def valid(p: dict[str, int]) -> bool:
    """Kernel Tuner's GEMM restrictions."""
    return (p["KWG"] % p["KWI"] == 0
            and p["MWG"] % (p["MDIMC"] * p["VWM"]) == 0
            and p["NWG"] % (p["NDIMC"] * p["VWN"]) == 0
            and p["MWG"] % (p["MDIMA"] * p["VWM"]) == 0
            and p["NWG"] % (p["NDIMB"] * p["VWN"]) == 0
            and p["KWG"] % ((p["MDIMC"] * p["NDIMC"]) // p["MDIMA"]) == 0
            and p["KWG"] % ((p["MDIMC"] * p["NDIMC"]) // p["NDIMB"]) == 0)


def latency_ms(p: dict[str, int], rng: random.Random) -> float | None:
    """The model's milliseconds (``None``: fails at run time)."""
    mwi, nwi = p["MWG"] // p["MDIMC"], p["NWG"] // p["NDIMC"]
    if mwi * nwi > 64:
        return None  # too many registers per thread
    threads = p["MDIMC"] * p["NDIMC"]
    occupancy = min(1.0, threads / 256) * (0.8 if threads > 512 else 1.0)
    tile = 1.0 / (1.0 + 0.15 * (math.log2(mwi * nwi) - 4.5) ** 2)
    vector = 1.0 + 0.08 * (math.log2(p["VWM"]) + math.log2(p["VWN"])) - 0.05 * (p["VWM"] == 8) - 0.05 * (p["VWN"] == 8)
    local = 1.0 + 0.12 * p["SA"] * (p["MWG"] >= 64) + 0.12 * p["SB"] * (p["NWG"] >= 64) - 0.06 * (p["SA"] + p["SB"]) * (p["MWG"] * p["NWG"] <= 512)
    efficiency = max(0.02, occupancy * tile * vector * local)
    return 2.0 / efficiency * math.exp(rng.gauss(0.0, 0.05))


def write(path: Path, seed: int = 0) -> tuple[int, int, int]:
    """Write the cache; returns (routes in the product, configurations, failed)."""
    rng = random.Random(seed)
    keys = list(TUNE_PARAMS)
    cache, failed = {}, 0
    product = itertools.product(*(TUNE_PARAMS[k] for k in keys))
    total = 0
    for values in product:
        total += 1
        p = dict(zip(keys, values, strict=True))
        if not valid(p):
            continue
        t = latency_ms(p, rng)
        entry: dict[str, object] = {**p, "compile_time": 900.0 + 400.0 * rng.random()}
        if t is None:
            failed += 1
            entry["time"] = "RuntimeFailedConfig"
        else:
            entry["times"] = [round(t * (1 + 0.01 * rng.random()), 6) for _ in range(7)]
            entry["time"] = sum(entry["times"]) / 7
        cache[",".join(str(v) for v in values)] = entry
    doc = {"device_name": "synthetic (GEMM space, modelled latencies)", "kernel_name": "Xgemm",
           "problem_size": [4096, 4096], "tune_params_keys": keys, "tune_params": TUNE_PARAMS,
           "objective": "time", "cache": cache}
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return total, len(cache), failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="the cache to write (.json.gz)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    total, configs, failed = write(args.out, args.seed)
    print(f"{args.out}: {total:,} routes in the product, {configs:,} configurations "
          f"({failed:,} failing), {total - configs:,} infeasible")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
