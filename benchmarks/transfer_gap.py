"""Why a warm start transfers badly (issue 40 item 4): the source's verdict on the target's best.

For a pair of brute-forced Kernel Tuner spaces of one kernel on two GPUs (``SRC DST``), from the
recordings alone (no search): how many target routes reach 95/90/80/70 % of the target's
optimum and what the source says of them (measured, failed, absent); the target optimum's rank
in the source; per combination of the two-valued knobs, the best fraction on each GPU; the
Spearman correlation of the median latencies overall and within each combination; the spread
of log(target / source) over the shared routes (what a transfer model's residual must cover).

    .venv/bin/python benchmarks/transfer_gap.py convolution_milo_A6000 convolution_milo_A100
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import Counter
from itertools import product
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))


def medians(rec) -> dict[tuple[str, ...], float | None]:
    """Per route (its values in knob order): the median latency, ``None`` where it failed."""
    from gptuner_core.routes import Route

    out: dict = {}
    for r in rec.records:
        key = tuple(v for _, v in Route.parse(r.requested_route).assignments)
        out[key] = r.latency.median_ms if r.eligible and r.latency else None
    return out


def main() -> int:
    from _kt_space import load_kt
    from scipy.stats import spearmanr

    src_name, dst_name = sys.argv[1:3]
    src, dst = load_kt(src_name), load_kt(dst_name)
    names = [n for n, _ in dst.expression.baseline().assignments]
    s, d = medians(src), medians(dst)
    s_ok = {k: v for k, v in s.items() if v is not None}
    d_ok = {k: v for k, v in d.items() if v is not None}
    s_opt, d_opt = min(s_ok.values()), min(d_ok.values())
    d_best = min(d_ok, key=d_ok.get)
    s_rank = sorted(s_ok, key=s_ok.get)

    def verdict(k) -> str:
        return "absent" if k not in s else ("failed" if s[k] is None else "measured")

    print(f"{src_name} -> {dst_name}")
    for t in (0.95, 0.9, 0.8, 0.7):
        top = [k for k in d_ok if d_opt / d_ok[k] >= t]
        print(f"  target routes >= {t:.0%}: {len(top)}; in the source: {dict(Counter(map(verdict, top)))}")
    where = f"rank {s_rank.index(d_best) + 1} of {len(s_rank)}, {s_opt / s_ok[d_best]:.3f} of its optimum" \
        if d_best in s_ok else verdict(d_best)
    print(f"  target optimum {dict(zip(names, d_best, strict=True))}: in the source {where}")
    top200 = [d_opt / d_ok[k] for k in s_rank[:200] if k in d_ok]
    print(f"  the source's 200 best on the target: best {max(top200):.3f}, mean {statistics.fmean(top200):.3f}")
    barred = [d_opt / v for k, v in d_ok.items() if verdict(k) != "measured"]
    print(f"  target routes the source failed or lacks: {len(barred)} measured on the target, "
          f"best {max(barred, default=0):.3f} of its optimum")
    switches = [i for i, n in enumerate(names) if len({k[i] for k in d}) == 2]
    shared = [k for k in d_ok if k in s_ok]
    rho = spearmanr([d_ok[k] for k in shared], [s_ok[k] for k in shared]).statistic
    print(f"  Spearman over {len(shared)} shared measured routes: {rho:.3f}")
    print("  " + ", ".join(names[i] for i in switches) + ": best on source | target, Spearman, n")
    for combo in product(*[sorted({k[i] for k in d}) for i in switches]):
        def inside(k, combo=combo) -> bool:
            return all(k[i] == v for i, v in zip(switches, combo, strict=True))
        a = [s_opt / v for k, v in s_ok.items() if inside(k)]
        b = [d_opt / v for k, v in d_ok.items() if inside(k)]
        both = [k for k in shared if inside(k)]
        if not b:
            continue
        r = spearmanr([d_ok[k] for k in both], [s_ok[k] for k in both]).statistic if len(both) > 2 else float("nan")
        print(f"    {combo}: {max(a, default=0):.3f} | {max(b):.3f}, {r:.2f}, {len(both)}")
    ratio = [math.log(d_ok[k] / s_ok[k]) for k in shared]
    mean = statistics.fmean(ratio)
    print(f"  log(target / source): spread {statistics.pstdev(ratio):.3f}; the target optimum's "
          f"{math.log(d_ok[d_best] / s_ok[d_best]) - mean:+.3f} from the mean" if d_best in s_ok else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
