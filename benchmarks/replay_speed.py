"""Replay speed: the harness's own cost per proposal on a large recorded space.

A synthetic recording stands in for an imported Kernel Tuner space at issue 28's scale: an
80,000-route product (five knobs, 10x10x8x10x10 values) with 18,000 recorded configurations
(COMPLETE with 10 samples each, 5 % BUILD_FAILED; every other route is infeasible, as in an
exhaustive import). ``simulate`` replays a strategy on it for ``--budget`` builds per seed; every
``ask``/``tell`` of the strategy is timed, so

    harness time = wall time of simulate - strategy time   (loop, recorded evaluator, trace)

is what the replay itself costs per proposal (target: <= 1 ms); the strategy's construction
(imports, priors) counts as strategy time.

    .venv/bin/python benchmarks/replay_speed.py [--budget 200] [--seeds 5] [--search random]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import warnings
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SIZES = (10, 10, 8, 10, 10)  # 80,000 routes
RECORDED = 18_000


def synthetic_recording(seed: int = 0):
    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import Knob
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.recording import Recording
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState

    names = [f"-kt:p{i}" for i in range(len(SIZES))]
    knobs = [Knob(name=n, values=tuple(str(v) for v in range(s)), default="0")
             for n, s in zip(names, SIZES, strict=True)]
    db = KnobDatabase("synthetic-replay-speed", knobs)
    expr = Expression.parse(" ".join(f"{n}=[{'|'.join(k.values)}]" for n, k in zip(names, knobs, strict=True)), db)
    rng = random.Random(seed)
    size = expr.count("full")
    chosen = [0, *rng.sample(range(1, size), RECORDED - 1)]
    from gptuner_core.engine.evaluate.recorded import stats_of
    from gptuner_core.records import LatencyStats

    like = LatencyStats(median_ms=1, mean_ms=1, min_ms=1, p5_ms=1, p95_ms=1, p99_ms=1, cv=0,
                        ci_low_ms=1, ci_high_ms=1, n_samples=1)
    records = []
    for number, index in enumerate(chosen):
        route = expr.route_at("full", index)
        values = [int(v) for _, v in route.assignments]
        if number and rng.random() < 0.05:
            records.append(CandidateRecord(number=number, requested_route=str(route),
                                           state=CandidateState.BUILD_FAILED, error="RuntimeFailedConfig",
                                           build_time_s=1.0))
            continue
        base = 1.0 + sum((v - 3) ** 2 * 0.01 * (i + 1) for i, v in enumerate(values))
        samples = tuple(base * (1 + 0.01 * rng.random()) for _ in range(10))
        records.append(CandidateRecord(number=number, requested_route=str(route),
                                       state=CandidateState.COMPLETE, latency=stats_of(samples, like),
                                       samples_ms=samples, build_time_s=1.0))
    return Recording(source="synthetic", db=db, expression=expr, search="full", records=tuple(records),
                     config={"expression": str(expr), "search": "full", "space": "exhaustive"})


class Timed:
    """A strategy whose ``ask`` and ``tell`` are timed: ``calls`` the seconds of each, ``asks``
    how many asks, ``seconds`` their sum plus ``setup`` (its construction, when the caller
    times it)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.setup = 0.0
        self.calls: list[float] = []
        self.asks = 0

    @property
    def seconds(self) -> float:
        return self.setup + sum(self.calls)

    def _timed(self, fn, *a, **k):
        t0 = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            self.calls.append(time.perf_counter() - t0)

    def ask(self, *a, **k):
        self.asks += 1
        return self._timed(self.inner.ask, *a, **k)

    def tell(self, *a, **k):
        return self._timed(self.inner.tell, *a, **k)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--search", default="random")
    ap.add_argument("--recording", default="", help="a recording (gptuner import --out) instead of the "
                    "synthetic one, e.g. benchmarks/gemm_space.py's 82,944-route GEMM space")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import gptuner_core.strategies as strategies
    from gptuner_core.engine.loop.simulate import simulate

    t0 = time.perf_counter()
    if args.recording:
        from gptuner_core.recording import load_recording

        rec = load_recording(args.recording)
    else:
        rec = synthetic_recording()
    made = time.perf_counter() - t0
    t0 = time.perf_counter()
    rec.by_key  # noqa: B018 - the index, built once per recording
    rec.optimum()
    indexed = time.perf_counter() - t0
    print(f"recording: {rec.expression.count('full'):,} routes, {len(rec.records):,} recorded "
          f"(made in {made:.2f} s, indexed in {indexed:.2f} s)")
    real_get = strategies.get_strategy
    timers: list[Timed] = []

    def timed_get(*a, **k):
        t0 = time.perf_counter()
        timers.append(Timed(real_get(*a, **k)))
        timers[-1].setup = time.perf_counter() - t0  # the strategy's set-up is its own cost
        return timers[-1]

    strategies.get_strategy = timed_get
    wall = strat = 0.0
    builds = asks = 0
    try:
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            res = simulate(args.search, rec, args.budget, seed)
            wall += time.perf_counter() - t0
            strat += timers[-1].seconds
            asks += timers[-1].asks
            builds += res.builds_used
    finally:
        strategies.get_strategy = real_get
    harness = wall - strat
    print(f"{args.search}, {args.seeds} seed(s) x {args.budget} builds: {builds} builds, {asks} proposals "
          f"in {wall:.2f} s = {asks / wall:,.0f} proposals/s")
    print(f"harness {1e3 * harness / asks:.3f} ms per proposal, strategy {1e3 * strat / asks:.3f} ms "
          f"per proposal ({100 * harness / wall:.0f} % harness)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
