"""Backend-agnostic measurement: adaptive sampling, statistics, re-validation, drift, telemetry.

A reported speed-up must be real. One timing pass per route (trtexec's tuner) lets run-to-run noise
pick "winners"; this layer measures until the median is known, compares with confidence intervals,
and re-validates the top candidates interleaved in fresh processes before a winner is declared.

How the engine uses it::

    from gptuner_core import measurement as m

    # in the candidate's child process
    result = m.measure(runner.time_calls, m.SamplingSettings(), telemetry=runner.telemetry)
    result.stats        # records.LatencyStats (median, mean, min, p5/p95/p99, CV, CI, stop_reason)
    result.samples_ms   # tuple[float, ...]: per-call ms of every sample (raw, always kept)
    result.telemetry    # {"start", "end", "throttled", "busy", "n_windows", ...}
    result.windows      # tuple[Window, ...]: telemetry windows

    # in the tuner, per candidate (screening; within-window noise only)
    est = m.speedup(default.samples_ms, cand.samples_ms, confidence=0.95, seed=0)
    est.point, est.low, est.high            # > 1 means faster than the default
    top = m.rank(records, k=3, exclude=[0])  # eligible candidates, fastest median first

    # before declaring a winner: sequential interleaved rounds, each measurement in a fresh
    # process, until every contender is decided or the round / time budget is spent
    plan = m.SequentialPlan(min_effect=0.01, max_rounds=20, max_time_s=remaining_s)
    res = m.revalidate_sequential(top, 0, measure_fresh, plan, seed=0, on_round=progress)
    res.verdict         # Verdict.WINNER | NOT_FASTER | INCONCLUSIVE; res.message says why
    res.winner          # int | None; res.projected_rounds when inconclusive
    store.set_meta("winner", res.winner_meta())

    # regimes: per-process medians or one window's samples in two speed levels
    m.detect_regimes(medians_ms, scope="processes", route=3)   # -> Regimes

    # drift sentinel (baseline events: payload {"median_ms", "after_candidate"})
    m.drift(events); m.drift_range(events); m.normalize(t, median_ms, events)

    # study summary: tiles, drift chart points and warnings from one computation
    health = m.health_summary(records, events)
    health.tiles(); health.drift.points; health.warnings; health.regimes
    store.set_meta("health", health.to_json())

Public API:

* :class:`SamplingSettings` (frozen; ``scaled(factor)``, ``to_json``/``from_json``),
  :func:`measure` ``(time_calls, settings=None, telemetry=None, clock=time.perf_counter)
  -> MeasureResult``, :class:`MeasureResult`, :class:`Window`, ``STOP_REASONS``.
* :func:`summarize` ``(samples_ms, calls_per_sample=1, *, confidence, warmup_calls, stop_reason,
  wall_s) -> LatencyStats``, :func:`median_ci`, :func:`bootstrap_ci`, :func:`speedup`
  ``(default_samples, candidate_samples, confidence=0.95, seed=0) -> SpeedupEstimate``
  (``speedup_ci`` is the same function), :class:`SpeedupEstimate`, :func:`rank`.
* :func:`revalidate_sequential` ``(contenders, default, measure_fresh, plan=None, *, seed=0,
  on_round=None, clock=time.monotonic) -> SequentialResult``, :class:`SequentialPlan`,
  :class:`SequentialResult`, :class:`ContenderVerdict`, :class:`Verdict`.
* :func:`schedule` (the interleaved order), :func:`paired_speedup`.
* :func:`detect_regimes` ``(values_ms, *, scope="processes"|"window", route=None) -> Regimes``.
* :func:`drift`, :func:`drift_range`, :func:`normalize`, :func:`normalized_speedup`,
  :func:`nearest`, :func:`baselines`, :class:`Baseline`.
* :func:`gpu_telemetry`, :func:`cpu_telemetry`, :func:`window_telemetry`, :class:`CpuSampler`.
* :func:`health_summary` ``(records, baseline_events=(), *, regimes=()) -> HealthSummary``
  (``tiles()``, ``drift.points``, ``warnings``, ``regimes``).

Errors: bad settings or inputs raise :class:`~gptuner_core.errors.ConfigError`; a runner whose
``time_calls`` returns something that is not a duration raises
:class:`~gptuner_core.errors.BackendError`. Only numpy and scipy are imported; ``pynvml`` lazily.
"""

from __future__ import annotations

from gptuner_core.measurement.drift import Baseline
from gptuner_core.measurement.drift import baselines
from gptuner_core.measurement.drift import drift
from gptuner_core.measurement.drift import drift_range
from gptuner_core.measurement.drift import nearest
from gptuner_core.measurement.drift import normalize
from gptuner_core.measurement.drift import normalized_speedup
from gptuner_core.measurement.health import HealthSummary
from gptuner_core.measurement.health import health_summary
from gptuner_core.measurement.regimes import Regimes
from gptuner_core.measurement.regimes import detect_regimes
from gptuner_core.measurement.revalidation import paired_speedup
from gptuner_core.measurement.revalidation import schedule
from gptuner_core.measurement.sampling import STOP_REASONS
from gptuner_core.measurement.sampling import MeasureResult
from gptuner_core.measurement.sampling import SamplingSettings
from gptuner_core.measurement.sampling import Window
from gptuner_core.measurement.sampling import measure
from gptuner_core.measurement.sequential import revalidate_sequential
from gptuner_core.measurement.shape_objective import ShapeObjective
from gptuner_core.measurement.shape_objective import ShapeSpeedup
from gptuner_core.measurement.shape_objective import shape_speedup
from gptuner_core.measurement.stats import SpeedupEstimate
from gptuner_core.measurement.stats import bootstrap_ci
from gptuner_core.measurement.stats import median_ci
from gptuner_core.measurement.stats import rank
from gptuner_core.measurement.stats import speedup
from gptuner_core.measurement.stats import summarize
from gptuner_core.measurement.telemetry import CpuSampler
from gptuner_core.measurement.telemetry import cpu_telemetry
from gptuner_core.measurement.telemetry import gpu_telemetry
from gptuner_core.measurement.telemetry import window_telemetry
from gptuner_core.measurement.verdicts import ContenderVerdict
from gptuner_core.measurement.verdicts import SequentialPlan
from gptuner_core.measurement.verdicts import SequentialResult
from gptuner_core.measurement.verdicts import Verdict


#: Alias used in docs/architecture.md.
speedup_ci = speedup

__all__ = [
    "STOP_REASONS",
    "Baseline",
    "ContenderVerdict",
    "CpuSampler",
    "HealthSummary",
    "MeasureResult",
    "Regimes",
    "SamplingSettings",
    "SequentialPlan",
    "SequentialResult",
    "ShapeObjective",
    "ShapeSpeedup",
    "SpeedupEstimate",
    "Verdict",
    "Window",
    "baselines",
    "bootstrap_ci",
    "cpu_telemetry",
    "detect_regimes",
    "drift",
    "drift_range",
    "gpu_telemetry",
    "health_summary",
    "measure",
    "median_ci",
    "nearest",
    "normalize",
    "normalized_speedup",
    "shape_speedup",
    "paired_speedup",
    "rank",
    "revalidate_sequential",
    "schedule",
    "speedup",
    "speedup_ci",
    "summarize",
    "window_telemetry",
]
