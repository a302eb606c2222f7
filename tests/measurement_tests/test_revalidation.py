"""Interleaved re-validation: the schedule, the paired interval, and a real 24 % gain declared in fresh processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from gptuner_core.errors import ConfigError
from gptuner_core.measurement import SequentialPlan
from gptuner_core.measurement import paired_speedup
from gptuner_core.measurement import revalidate_sequential
from gptuner_core.measurement import schedule


def process_noise(true_ms: dict[int, float], process_cv: float, seed: int, n: int = 100):
    """A synthetic ``measure_fresh``: each call is a "process" with its own lognormal offset
    (between-process noise) and per-sample noise inside it, as measured on our hosts."""
    rng = np.random.default_rng(seed)

    def measure_fresh(number: int, round_index: int) -> list[float]:
        offset = rng.lognormal(0.0, process_cv)
        return list(true_ms[number] * offset * rng.lognormal(0.0, 0.05, n))

    return measure_fresh


class TestSchedule:
    def test_every_round_runs_every_route_once(self) -> None:
        """Each round holds the default and each candidate exactly once."""
        order = schedule([3, 7, 9], 0, rounds=6, seed=1)
        assert len(order) == 6
        for r in order:
            assert sorted(r) == [0, 3, 7, 9]

    def test_order_is_shuffled_and_seeded(self) -> None:
        """Orders differ between rounds, repeat with the seed, change with another seed."""
        order = schedule([1, 2, 3], 0, rounds=8, seed=4)
        assert len(set(order)) > 1
        assert schedule([1, 2, 3], 0, rounds=8, seed=4) == order
        assert schedule([1, 2, 3], 0, rounds=8, seed=5) != order
        firsts = Counter(r[0] for r in schedule([1, 2, 3], 0, rounds=400, seed=0))
        assert set(firsts) == {0, 1, 2, 3} and min(firsts.values()) > 60

    def test_measure_fresh_is_called_in_schedule_order(self) -> None:
        """Sequential re-validation runs exactly the schedule it reports, with the round index."""
        calls: list[tuple[int, int]] = []

        def measure_fresh(number: int, round_index: int) -> list[float]:
            calls.append((number, round_index))
            return [1.0, 1.1, 0.9]

        res = revalidate_sequential([5, 6], 0, measure_fresh, SequentialPlan(min_rounds=3, max_rounds=3), seed=2)
        assert calls == [(num, i) for i, r in enumerate(res.schedule) for num in r]

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (([], 0, 5), "at least one candidate"),
            (([1, 1], 0, 5), "must be unique"),
            (([0, 1], 0, 5), "must not also be a candidate"),
            (([1], 0, 1), "rounds must be an integer >= 2 (got 1)"),
        ],
    )
    def test_bad_arguments(self, args: tuple, message: str) -> None:
        """Bad candidate lists and round counts are clear ConfigErrors."""
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
            schedule(*args)


class TestPairedSpeedup:
    def test_paired_speedup_interval(self) -> None:
        """Constant ratios give a zero-width interval; spread widens it around the geometric mean."""
        e = paired_speedup([2.0, 2.0, 2.0], [1.0, 1.0, 1.0])
        assert (e.point, e.low, e.high) == (2.0, 2.0, 2.0)
        e = paired_speedup([1.0, 1.1, 0.9, 1.0], [0.8, 0.9, 0.75, 0.8])
        assert e.low < e.point < e.high
        with pytest.raises(ConfigError, match=">= 1 paired"):
            paired_speedup([], [])


# -- a real workload: numpy matmuls timed in fresh processes ------------------------------------

CHILD = """
import json, sys, time
import numpy as np
from gptuner_core.measurement import SamplingSettings, measure
n = int(sys.argv[1])
a = np.random.default_rng(0).random((n, n))
def time_calls(k):
    t = time.perf_counter_ns()
    for _ in range(k):
        a @ a
    return time.perf_counter_ns() - t
r = measure(time_calls, SamplingSettings(max_time_s=0.4, warmup_s=0.1, environment=False))
print(json.dumps(list(r.samples_ms)))
"""


@pytest.mark.slow
def test_real_matmul_gain_is_declared_in_fresh_processes() -> None:
    """Default 160x160 matmul, an identical twin, and 128x128 (half the flops) in fresh
    single-threaded processes: the twin is never declared faster, a winner only with its interval
    above 1.0 (quiet, the smaller size wins: benchmarks/real_effect.py). The
    effect is large on purpose: with 146x146 (~24 % fewer flops) a noisy CI machine gave
    "inconclusive after 6 rounds ... CI [0.911, 1.969]", which is the right verdict for that noise
    and not what this test is about."""
    sizes = {0: 160, 1: 160, 2: 128}
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")

    def measure_fresh(number: int, round_index: int) -> list[float]:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(sizes[number])],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return json.loads(out.stdout)

    res = revalidate_sequential([1, 2], 0, measure_fresh, SequentialPlan(max_rounds=6), seed=0)
    # behaviour, not a timing outcome (issue 24: the suite passes on a busy machine; how often
    # the gain is found is benchmarks/real_effect.py's figure): the identical twin is never
    # declared faster, and a declared winner is the smaller size with an interval above 1.0
    assert res.winner in (2, None), res.message
    if res.winner == 2:
        assert res.contender(2).estimate.low > 1.0
