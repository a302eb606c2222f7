"""The adaptive stop rule on synthetic, seeded ``time_calls`` callables and on real work.

The synthetic callables report the time a call "would have taken" (driven by a seeded RNG); the
measurement layer bounds elapsed time by the larger of the wall clock and the reported time, so
these tests exercise the same code path a slow real runner does, in milliseconds of real time.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError
from gptuner_core.measurement import STOP_REASONS
from gptuner_core.measurement import SamplingSettings
from gptuner_core.measurement import measure


QUIET = {"environment": False}  # no host readings: deterministic and fast


def lognormal_calls(median_ms: float, sigma: float, seed: int):
    rng = np.random.default_rng(seed)

    def time_calls(n: int) -> int:
        return int(np.sum(rng.lognormal(np.log(median_ms * 1e6), sigma, n)))

    return time_calls


class TestSettings:
    def test_defaults(self) -> None:
        """The documented defaults."""
        s = SamplingSettings()
        assert (s.warmup_s, s.warmup_calls, s.min_samples, s.max_samples) == (0.2, 10, 20, 2000)
        assert (s.max_time_s, s.target_rel_ci, s.confidence) == (10.0, 0.01, 0.95)
        assert s.min_sample_time_s == 0.001

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"min_samples": 1}, "sampling setting 'min_samples' must be an integer >= 2 (got 1)"),
            ({"max_samples": 10}, "'max_samples' must be an integer >= min_samples (20) (got 10)"),
            ({"max_time_s": 0}, "'max_time_s' must be a number > 0 (got 0)"),
            ({"confidence": 1.0}, "'confidence' must be a number strictly between 0 and 1"),
            ({"warmup_s": -1}, "'warmup_s' must be a number >= 0"),
            ({"target_rel_ci": float("nan")}, "'target_rel_ci' must be a number > 0"),
            ({"warmup_calls": 2.5}, "'warmup_calls' must be an integer >= 0"),
            ({"exclude_throttled": "yes"}, "'exclude_throttled' must be true or false"),
        ],
    )
    def test_validation_messages(self, kwargs: dict, message: str) -> None:
        """Each bad value names the setting, what was expected and what was found."""
        with pytest.raises(ConfigError) as err:
            SamplingSettings(**kwargs)
        assert message in str(err.value)

    def test_scaled(self) -> None:
        """Budgets scale; precision and warm-up do not; min_samples keeps a floor of 6."""
        s = SamplingSettings()
        short = s.scaled(0.25)
        assert (short.min_samples, short.max_samples, short.max_time_s) == (6, 500, 2.5)
        assert (short.target_rel_ci, short.warmup_s) == (s.target_rel_ci, s.warmup_s)
        long = s.scaled(3)
        assert (long.min_samples, long.max_samples, long.max_time_s) == (60, 6000, 30.0)
        with pytest.raises(ConfigError, match="scale factor must be a number > 0"):
            s.scaled(0)

    def test_json_round_trip_and_unknown_keys(self) -> None:
        """to_json/from_json round-trip; unknown keys list the allowed ones."""
        s = SamplingSettings(max_time_s=3.0, gpu_index=None)
        assert SamplingSettings.from_json(s.to_json()) == s
        with pytest.raises(ConfigError, match=r"unknown sampling setting\(s\) \['max_time'\]"):
            SamplingSettings.from_json({"max_time": 3})


class TestStopRule:
    def test_constant_input_converges_at_min_samples(self) -> None:
        """A constant runner: CI width 0, converged after exactly min_samples."""
        r = measure(lambda n: n * 2_000_000, SamplingSettings(**QUIET))
        assert r.stats.stop_reason == "converged"
        assert r.stats.n_samples == len(r.samples_ms) == 20
        assert r.stats.ci_low_ms == r.stats.ci_high_ms == r.stats.median_ms == 2.0
        assert r.stats.calls_per_sample == 1

    def test_noisy_input_converges_within_bounds(self) -> None:
        """Lognormal noise (sigma 0.1): converged between min and max, median near the truth."""
        s = SamplingSettings(**QUIET)
        r = measure(lognormal_calls(2.0, 0.1, seed=1), s)
        assert r.stats.stop_reason == "converged"
        assert s.min_samples <= r.stats.n_samples < s.max_samples
        assert (r.stats.ci_high_ms - r.stats.ci_low_ms) / 2 / r.stats.median_ms <= s.target_rel_ci
        assert r.stats.median_ms == pytest.approx(2.0, rel=0.02)

    def test_unreachable_target_stops_at_max_samples(self) -> None:
        """Heavy noise with a tiny target: stops at max_samples, never beyond."""
        s = SamplingSettings(target_rel_ci=1e-4, max_samples=300, max_time_s=1e6, **QUIET)
        r = measure(lognormal_calls(1.0, 1.0, seed=2), s)
        assert r.stats.stop_reason == "max_samples"
        assert len(r.samples_ms) == 300

    def test_slow_runner_stops_at_max_time(self) -> None:
        """50 ms calls with max_time_s=2: stops at the time bound, overshoot at most one sample."""
        s = SamplingSettings(target_rel_ci=1e-4, max_time_s=2.0, **QUIET)
        total_ns = 0
        inner = lognormal_calls(50.0, 0.3, seed=3)

        def time_calls(n: int) -> int:
            nonlocal total_ns
            ns = inner(n)
            total_ns += ns
            return ns

        r = measure(time_calls, s)
        assert r.stats.stop_reason == "max_time"
        assert total_ns / 1e9 <= 2.0 + max(r.samples_ms) / 1e3
        assert r.stats.wall_s == pytest.approx(total_ns / 1e9)

    def test_wall_clock_bound_on_real_work(self) -> None:
        """A real numpy workload and an unreachable target: wall time stays within max_time_s."""
        a = np.random.default_rng(0).random((64, 64))

        def time_calls(n: int) -> int:
            t = time.perf_counter_ns()
            for _ in range(n):
                a @ a
            return time.perf_counter_ns() - t

        s = SamplingSettings(max_time_s=0.6, target_rel_ci=1e-6, warmup_s=0.05, **QUIET)
        t0 = time.perf_counter()
        r = measure(time_calls, s)
        assert time.perf_counter() - t0 < 0.6 + 0.3
        assert r.stats.stop_reason in ("max_time", "max_samples")
        assert r.stats.stop_reason in STOP_REASONS

    def test_injected_clock_bounds_time(self) -> None:
        """The clock argument is what max_time_s is checked against (here: 10 ms per reading)."""
        ticks = iter(range(10**6))
        r = measure(
            lambda n: n * 1000,
            SamplingSettings(
                max_time_s=1.0, target_rel_ci=1e-9, warmup_s=0, warmup_calls=0, **QUIET
            ),
            clock=lambda: next(ticks) * 0.01,
        )
        # constant samples converge first; check the clock was consulted during warm-up instead
        assert r.stats.stop_reason == "converged"
        r = measure(
            lognormal_calls(0.001, 0.5, seed=9),
            SamplingSettings(max_time_s=1.0, target_rel_ci=1e-9, **QUIET),
            clock=lambda: next(ticks) * 0.01,
        )
        assert r.stats.stop_reason == "max_time"
        assert len(r.samples_ms) < 100  # ~1 s of 10 ms clock ticks, not 2000 samples


class TestBatching:
    def test_fast_calls_are_batched_to_the_minimum_sample_time(self) -> None:
        """1 us calls with min_sample_time_s=1 ms: 1024 calls per sample, per-call ms reported."""
        r = measure(lambda n: n * 1000, SamplingSettings(**QUIET))
        assert r.stats.calls_per_sample == 1024
        assert r.stats.median_ms == pytest.approx(0.001)

    def test_batching_respects_its_cap(self) -> None:
        """The doubling stops at max_calls_per_sample."""
        r = measure(lambda n: n, SamplingSettings(max_calls_per_sample=64, **QUIET))
        assert r.stats.calls_per_sample == 64

    def test_warm_up_reaches_count_and_time(self) -> None:
        """Warm-up runs at least warmup_calls and warmup_s of (reported) time."""
        r = measure(
            lambda n: n * 5_000_000, SamplingSettings(warmup_s=0.2, warmup_calls=10, **QUIET)
        )
        assert r.stats.warmup_calls == 40  # 40 x 5 ms = 0.2 s


class TestTelemetryWindows:
    def test_throttled_windows_are_excluded_and_re_measured(self) -> None:
        """Samples of throttled windows are kept raw but left out of the statistics."""
        state = {"throttled": True}

        def time_calls(n: int) -> int:
            return n * (3_000_000 if state["throttled"] else 1_000_000)

        def telemetry() -> dict:
            reading = {"throttled": state["throttled"]}
            if len(readings) >= 2:  # start + first window end are throttled, later ones are not
                state["throttled"] = False
            readings.append(reading)
            return reading

        readings: list[dict] = []
        s = SamplingSettings(window_s=0.05, min_samples=100, max_samples=1000, **QUIET)
        r = measure(time_calls, s, telemetry=telemetry)
        assert r.windows[0].excluded and not r.windows[-1].excluded
        dropped = sum(w.n_samples for w in r.windows if w.excluded)
        assert r.telemetry["excluded_samples"] == dropped > 0
        assert r.telemetry["throttled"] and r.telemetry["throttled_windows"] >= 1
        assert len(r.samples_ms) == r.stats.n_samples + r.telemetry["excluded_samples"]
        assert r.stats.median_ms == 1.0  # the 3 ms throttled samples do not count
        assert max(r.samples_ms) == 3.0  # ...but they are kept

    def test_everything_throttled_falls_back_to_all_samples(self) -> None:
        """If no clean window remains, all samples are used and the fallback is flagged."""
        r = measure(
            lambda n: n * 2_000_000,
            SamplingSettings(window_s=0.01, **QUIET),
            telemetry=lambda: {"throttled": True},
        )
        assert r.telemetry["throttled_fallback"]
        assert r.stats.n_samples == len(r.samples_ms)

    def test_environment_readings_are_recorded(self) -> None:
        """With environment on, each window holds runner, cpu and gpu readings."""
        r = measure(
            lognormal_calls(1.0, 0.05, seed=4),
            SamplingSettings(window_s=0.05),
            telemetry=lambda: {"backend": "synthetic"},
        )
        w = r.windows[-1].telemetry
        assert w["runner"] == {"backend": "synthetic"}
        assert w["cpu"]["available"] is True
        assert "available" in w["gpu"]
        assert r.telemetry["n_windows"] == len(r.windows) >= 1
        assert r.to_json()["stats"]["n_samples"] == r.stats.n_samples


@pytest.mark.parametrize("bad", [-1, None, float("inf"), "12"])
def test_bad_runner_time_is_a_backend_error(bad: object) -> None:
    """time_calls must return nanoseconds >= 0; anything else is a BackendError naming it."""
    with pytest.raises(
        BackendError, match=r"runner.time_calls\(1\) must return elapsed nanoseconds"
    ):
        measure(lambda n: bad, SamplingSettings(**QUIET))  # type: ignore[arg-type,return-value]
