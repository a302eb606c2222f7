"""Candidate records: state, latency, accuracy, the stored record."""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from dataclasses import field
from typing import Any


class CandidateState(str, enum.Enum):
    """Life cycle of one candidate route."""

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"
    BUILD_FAILED = "BUILD_FAILED"
    CRASHED = "CRASHED"
    TIMED_OUT = "TIMED_OUT"
    ACCURACY_FAILED = "ACCURACY_FAILED"
    DUPLICATE = "DUPLICATE"

    def is_finished(self) -> bool:
        return self not in (CandidateState.PENDING, CandidateState.RUNNING)

    def is_failure(self) -> bool:
        return self in (
            CandidateState.BUILD_FAILED,
            CandidateState.CRASHED,
            CandidateState.TIMED_OUT,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyStats:
    """Summary of one measurement window, all times in milliseconds per call.

    ``ci_low``/``ci_high`` bound the median (95 % by default). ``calls_per_sample`` > 1 when very
    fast models were timed in batches of calls (each sample is then the mean of that batch).
    """

    median_ms: float
    mean_ms: float
    min_ms: float
    p5_ms: float
    p95_ms: float
    p99_ms: float
    cv: float
    ci_low_ms: float
    ci_high_ms: float
    n_samples: int
    calls_per_sample: int = 1
    warmup_calls: int = 0
    stop_reason: str = ""
    wall_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LatencyStats:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, slots=True, kw_only=True)
class AccuracyResult:
    """Per-output losses (lower is better) and an optional task metric (higher is better)."""

    metric: str
    losses: dict[str, float]
    task_metric: float | None = None
    task_metric_name: str | None = None
    #: what a built-in task metric reports beside its value (detection: recall, precision, ...)
    task_details: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AccuracyResult:
        return cls(
            metric=data["metric"],
            losses={k: float(v) for k, v in data.get("losses", {}).items()},
            task_metric=data.get("task_metric"),
            task_metric_name=data.get("task_metric_name"),
            task_details={k: float(v) for k, v in (data.get("task_details") or {}).items()},
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateRecord:
    """One candidate route of a study, as stored.

    ``number`` is the 0-based evaluation order within the study (0 is always the default route).
    ``requested_route`` is what the strategy asked for; ``effective_route`` what the backend reports
    it really applied. ``samples_ms`` are the raw latency samples (kept compactly in the store).
    """

    number: int
    requested_route: str
    state: CandidateState = CandidateState.PENDING
    effective_route: str | None = None
    error: str | None = None
    phase: str = ""
    strategy_info: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None
    build_time_s: float | None = None
    measure_time_s: float | None = None
    artifact_path: str | None = None
    artifact_sha256: str | None = None
    artifact_size: int | None = None
    duplicate_of: int | None = None
    accuracy: AccuracyResult | None = None
    latency: LatencyStats | None = None
    samples_ms: tuple[float, ...] = ()
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None
    telemetry: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    log_path: str | None = None

    @property
    def eligible(self) -> bool:
        """Finished with a latency and not excluded by a crash or the accuracy gate."""
        return (
            self.state in (CandidateState.COMPLETE, CandidateState.DUPLICATE)
            and self.latency is not None
        )

    def replace(self, **changes: Any) -> CandidateRecord:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["state"] = self.state.value
        data["samples_ms"] = list(self.samples_ms)
        data["speedup_ci"] = list(self.speedup_ci) if self.speedup_ci else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CandidateRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        kw["state"] = CandidateState(kw.get("state", "PENDING"))
        if kw.get("accuracy") is not None:
            kw["accuracy"] = AccuracyResult.from_json(kw["accuracy"])
        if kw.get("latency") is not None:
            kw["latency"] = LatencyStats.from_json(kw["latency"])
        kw["samples_ms"] = tuple(kw.get("samples_ms") or ())
        if kw.get("speedup_ci") is not None:
            kw["speedup_ci"] = tuple(kw["speedup_ci"])
        return cls(**kw)
