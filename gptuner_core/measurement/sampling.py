"""Adaptive sampling: warm up, batch very fast calls, sample until the median is known well enough.

:func:`measure` runs inside the candidate's child process on ``runner.time_calls``:

1. **Warm-up** by time *and* count (``warmup_s`` and ``warmup_calls``, both must be reached),
   capped at half of ``max_time_s``. During warm-up the calls per sample are doubled until one
   sample spans at least ``min_sample_time_s`` (timer resolution and per-call overhead then stop
   dominating very fast models); each sample is then the mean per-call time of that batch.
2. **Sampling** until the distribution-free 95 % CI of the median has a relative half-width of at
   most ``target_rel_ci`` ("converged"), bounded by ``min_samples`` (no convergence check before),
   ``max_samples`` ("max_samples") and ``max_time_s`` for the whole call, warm-up included
   ("max_time"). A constant input has a CI of width 0 and converges at ``min_samples``.
3. **Windows**: every ``window_s`` seconds the environment is read (runner telemetry, host CPU,
   NVML GPU). Samples of a window flagged ``throttled`` do not count while sampling continues,
   so a throttled window is re-measured within the same bounds; the raw samples are always kept.

Elapsed time is the larger of the wall clock and the total time the runner reported, so a
runner whose clock runs ahead of the host's (or a synthetic one) is bounded the same way.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np

from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError
from gptuner_core.measurement.stats import relative_half_width
from gptuner_core.measurement.stats import summarize
from gptuner_core.measurement.telemetry import CpuSampler
from gptuner_core.measurement.telemetry import window_telemetry
from gptuner_core.records import LatencyStats


STOP_REASONS = ("converged", "max_samples", "max_time")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True, slots=True, kw_only=True)
class SamplingSettings:
    """How long and how precisely one candidate is timed.

    Attributes:
        warmup_s: minimum warm-up time (seconds).
        warmup_calls: minimum warm-up calls.
        min_samples: samples taken before convergence is first checked.
        max_samples: hard cap on samples.
        max_time_s: hard cap on the whole measurement, warm-up included (seconds).
        target_rel_ci: stop when the median's CI half-width / median is at most this.
        confidence: level of that CI.
        min_sample_time_s: calls per sample are doubled until one sample spans this long.
        max_calls_per_sample: cap on that doubling.
        window_s: telemetry is read every ``window_s`` seconds of sampling.
        exclude_throttled: leave samples of throttled windows out of the statistics.
        environment: read host CPU and NVML GPU telemetry per window (besides the runner's).
        gpu_index: NVML device index for GPU telemetry, ``None`` to skip NVML.

    Example:
        >>> SamplingSettings(max_time_s=5).scaled(0.5).max_time_s
        2.5
    """

    warmup_s: float = 0.2
    warmup_calls: int = 10
    min_samples: int = 20
    max_samples: int = 2000
    max_time_s: float = 10.0
    target_rel_ci: float = 0.01
    confidence: float = 0.95
    min_sample_time_s: float = 0.001
    max_calls_per_sample: int = 1 << 20
    window_s: float = 1.0
    exclude_throttled: bool = True
    environment: bool = True
    gpu_index: int | None = 0

    def __post_init__(self) -> None:
        def bad(name: str, expected: str) -> ConfigError:
            got = getattr(self, name)
            return ConfigError(f"sampling setting '{name}' must be {expected} (got {got!r})")

        for name in ("warmup_s", "min_sample_time_s"):
            if not (_is_num(getattr(self, name)) and getattr(self, name) >= 0):
                raise bad(name, "a number >= 0")
        for name in ("max_time_s", "target_rel_ci", "window_s"):
            if not (_is_num(getattr(self, name)) and getattr(self, name) > 0):
                raise bad(name, "a number > 0")
        if not (_is_int(self.warmup_calls) and self.warmup_calls >= 0):
            raise bad("warmup_calls", "an integer >= 0")
        if not (_is_int(self.min_samples) and self.min_samples >= 2):
            raise bad("min_samples", "an integer >= 2")
        if not (_is_int(self.max_samples) and self.max_samples >= self.min_samples):
            raise bad("max_samples", f"an integer >= min_samples ({self.min_samples})")
        if not (_is_int(self.max_calls_per_sample) and self.max_calls_per_sample >= 1):
            raise bad("max_calls_per_sample", "an integer >= 1")
        if not (_is_num(self.confidence) and 0 < self.confidence < 1):
            raise bad("confidence", "a number strictly between 0 and 1")
        for name in ("exclude_throttled", "environment"):
            if not isinstance(getattr(self, name), bool):
                raise bad(name, "true or false")
        if self.gpu_index is not None and not (_is_int(self.gpu_index) and self.gpu_index >= 0):
            raise bad("gpu_index", "an integer >= 0 or null")

    def scaled(self, factor: float) -> SamplingSettings:
        """The same settings with sample and time budgets multiplied by ``factor``.

        Used by racing strategies: a short first look (``factor < 1``) and a longer look
        (``factor > 1``) for survivors. Warm-up, precision target and confidence are unchanged;
        ``min_samples`` never drops below 6 (the fewest samples whose median CI reaches 95 %).
        """
        if not (_is_num(factor) and factor > 0):
            msg = f"scale factor must be a number > 0 (got {factor!r})"
            raise ConfigError(msg)
        min_s = max(min(self.min_samples, 6), round(self.min_samples * factor))
        max_s = max(min_s, round(self.max_samples * factor))
        return dataclasses.replace(
            self, min_samples=min_s, max_samples=max_s, max_time_s=self.max_time_s * factor
        )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SamplingSettings:
        """Build from a JSON dict; unknown keys are rejected with the allowed ones listed."""
        if not isinstance(data, dict):
            msg = f"sampling settings must be a JSON object (got {type(data).__name__})"
            raise ConfigError(msg)
        names = sorted(f.name for f in dataclasses.fields(cls))
        unknown = sorted(set(data) - set(names))
        if unknown:
            msg = f"unknown sampling setting(s) {unknown} (allowed: {names})"
            raise ConfigError(msg)
        return cls(**data)


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """One telemetry window of a measurement: samples ``[first_sample, first_sample + n)``."""

    index: int
    first_sample: int
    n_samples: int
    start_s: float
    end_s: float
    median_ms: float
    telemetry: dict[str, Any] = field(default_factory=dict)
    excluded: bool = False

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasureResult:
    """What :func:`measure` returns.

    Attributes:
        stats: summary of the samples used (throttled windows excluded unless nothing else).
        samples_ms: every sample, per-call ms, in time order (excluded ones included).
        telemetry: ``{"start", "end", "n_windows", "throttled_windows", "busy_windows",
            "throttled", "busy", "excluded_samples", "throttled_fallback"}``.
        windows: the telemetry windows in order.
    """

    stats: LatencyStats
    samples_ms: tuple[float, ...]
    telemetry: dict[str, Any]
    windows: tuple[Window, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "stats": self.stats.to_json(),
            "samples_ms": list(self.samples_ms),
            "telemetry": self.telemetry,
            "windows": [w.to_json() for w in self.windows],
        }


class _Timer:
    """Calls ``time_calls`` with checks and keeps the elapsed-time account."""

    def __init__(self, time_calls: Callable[[int], int], clock: Callable[[], float]) -> None:
        self._time_calls = time_calls
        self._clock = clock
        self._t0 = clock()
        self.timed_ns = 0

    def __call__(self, n: int) -> int:
        ns = self._time_calls(n)
        if isinstance(ns, bool) or not isinstance(ns, int | float | np.integer | np.floating):
            msg = f"runner.time_calls({n}) must return elapsed nanoseconds (got {ns!r})"
            raise BackendError(msg)
        if not math.isfinite(ns) or ns < 0:
            msg = f"runner.time_calls({n}) must return elapsed nanoseconds >= 0 (got {ns!r})"
            raise BackendError(msg)
        self.timed_ns += int(ns)
        return int(ns)

    def elapsed(self) -> float:
        return max(self._clock() - self._t0, self.timed_ns / 1e9)


def _warm_up(timer: _Timer, s: SamplingSettings) -> tuple[int, int]:
    """Run the warm-up; return ``(warm-up calls, calls per sample)``."""
    min_ns = s.min_sample_time_s * 1e9
    calls = 0
    k = 1
    while True:
        ns = timer(k)
        calls += k
        batched = ns >= min_ns or k >= s.max_calls_per_sample
        if not batched:
            k = min(2 * k, s.max_calls_per_sample)
        elapsed = timer.elapsed()
        if batched and calls >= s.warmup_calls and elapsed >= s.warmup_s:
            return calls, k
        if elapsed >= s.max_time_s / 2:
            return calls, k


def measure(
    time_calls: Callable[[int], int],
    settings: SamplingSettings | None = None,
    telemetry: Callable[[], dict[str, Any]] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> MeasureResult:
    """Time a runner adaptively (see the module docstring for the procedure).

    Args:
        time_calls: ``Runner.time_calls``: run ``n`` calls back-to-back, return elapsed ns.
        settings: budgets and precision; defaults to ``SamplingSettings()``.
        telemetry: ``Runner.telemetry`` (read at the start and at the end of every window).
        clock: wall clock in seconds (monotonic).

    Returns:
        A :class:`MeasureResult`; ``stats.stop_reason`` is one of ``STOP_REASONS``.

    Raises:
        BackendError: ``time_calls`` returned something that is not a duration >= 0.
    """
    s = settings or SamplingSettings()
    timer = _Timer(time_calls, clock)
    cpu = CpuSampler() if s.environment else None

    def read() -> dict[str, Any]:
        runner = telemetry() if telemetry is not None else {}
        if not s.environment:
            return {
                "time": time.time(),
                "runner": runner,
                "throttled": bool(runner.get("throttled")),
                "busy": bool(runner.get("busy")),
            }
        return window_telemetry(runner, cpu=cpu, gpu_index=s.gpu_index)

    warmup_calls, k = _warm_up(timer, s)
    if cpu is not None:
        cpu.reset()  # the first window's CPU reading covers sampling only
    start_reading = read()

    samples: list[float] = []
    windows: list[Window] = []
    excluded = 0
    win_first, win_t0 = 0, timer.elapsed()
    check_at = s.min_samples
    reason = ""

    def close_window() -> None:
        nonlocal excluded, win_first, win_t0
        n = len(samples) - win_first
        if n == 0:
            return
        reading = read()
        drop = s.exclude_throttled and bool(reading.get("throttled"))
        excluded += n if drop else 0
        now = timer.elapsed()
        windows.append(
            Window(
                index=len(windows),
                first_sample=win_first,
                n_samples=n,
                start_s=win_t0,
                end_s=now,
                median_ms=float(np.median(samples[win_first:])),
                telemetry=reading,
                excluded=drop,
            )
        )
        win_first, win_t0 = len(samples), now

    def clean() -> list[float]:
        kept = [
            x
            for w in windows
            if not w.excluded
            for x in samples[w.first_sample : w.first_sample + w.n_samples]
        ]
        return kept + samples[win_first:]

    while True:
        samples.append(timer(k) / k / 1e6)
        elapsed = timer.elapsed()
        if elapsed - win_t0 >= s.window_s:
            close_window()
        n_clean = len(samples) - excluded
        if n_clean >= check_at:
            if relative_half_width(clean(), s.confidence) <= s.target_rel_ci:
                reason = "converged"
                break
            check_at = n_clean + max(1, n_clean // 20)
        if len(samples) >= s.max_samples:
            reason = "max_samples"
            break
        if timer.elapsed() >= s.max_time_s:
            reason = "max_time"
            break
    close_window()

    used = clean()
    fallback = len(used) < min(s.min_samples, len(samples))
    if fallback:
        used = samples
    stats = summarize(
        used,
        k,
        confidence=s.confidence,
        warmup_calls=warmup_calls,
        stop_reason=reason,
        wall_s=timer.elapsed(),
    )
    summary = {
        "start": start_reading,
        "end": windows[-1].telemetry if windows else start_reading,
        "n_windows": len(windows),
        "throttled_windows": sum(bool(w.telemetry.get("throttled")) for w in windows),
        "busy_windows": sum(bool(w.telemetry.get("busy")) for w in windows),
        "excluded_samples": 0 if fallback else excluded,
        "throttled_fallback": fallback,
    }
    summary["throttled"] = summary["throttled_windows"] > 0 or bool(start_reading.get("throttled"))
    summary["busy"] = summary["busy_windows"] > 0
    return MeasureResult(
        stats=stats, samples_ms=tuple(samples), telemetry=summary, windows=tuple(windows)
    )
