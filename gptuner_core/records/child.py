"""The candidate child protocol: the job a child is given and the result it returns."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gptuner_core.records.candidate import CandidateState
from gptuner_core.records.candidate import LatencyStats


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildJob:
    """What the tuner asks a candidate's child process to do (written as ``job.json``).

    A build job carries ``route`` (and ``known_artifacts``, artifact key -> candidate number, for
    duplicate detection); a re-measurement carries ``artifact`` of an existing candidate.
    ``task_metric``/``labels``/``golden`` let the child evaluate a user task metric in its own
    process (isolated, under the measurement timeout) instead of the tuner's. ``measure_feeds``
    (``.npz`` paths, named ``measure_labels``) are the shapes latency is measured at, each in
    turn in the same process; none = the first batch of ``inputs``.
    """

    backend: str
    model: str
    route: str
    inputs: str
    batch_size: int
    backend_options: dict[str, Any] = field(default_factory=dict)
    calibration: str | None = None
    measurement: dict[str, Any] = field(default_factory=dict)
    measure_scale: float = 1.0
    known_artifacts: dict[str, int] = field(default_factory=dict)
    artifact: str | None = None
    effective_route: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    task_metric: str | None = None
    task_output: str | None = None
    labels: str | None = None
    golden: str | None = None
    batch_axes: dict[str, int | None] = field(default_factory=dict)
    profile_runs: int = 0
    measure_feeds: tuple[str, ...] = ()
    measure_labels: tuple[str, ...] = ()
    #: overlap (``engine.scale.overlap``): build on ``build_cpus``, then wait for the device turn
    turn: dict[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> ChildJob:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChildJob:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShapeLatency:
    """The latency of one candidate at one measured shape (``--measure-shapes``)."""

    label: str
    latency: LatencyStats
    samples_ms: tuple[float, ...] = ()
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None

    def replace(self, **changes: Any) -> ShapeLatency:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "latency": self.latency.to_json(),
                "samples_ms": list(self.samples_ms), "speedup": self.speedup,
                "speedup_ci": list(self.speedup_ci) if self.speedup_ci else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ShapeLatency:
        ci = data.get("speedup_ci")
        return cls(label=str(data["label"]), latency=LatencyStats.from_json(data["latency"]),
                   samples_ms=tuple(float(s) for s in data.get("samples_ms") or ()),
                   speedup=data.get("speedup"), speedup_ci=(float(ci[0]), float(ci[1])) if ci else None)


#: the isolation layer's ``status`` word for each state a child can report
_CHILD_STATUS = {
    CandidateState.COMPLETE: "ok",
    CandidateState.DUPLICATE: "duplicate",
    CandidateState.BUILD_FAILED: "build_failed",
    CandidateState.CRASHED: "crashed",
    CandidateState.TIMED_OUT: "timed_out",
    CandidateState.ACCURACY_FAILED: "accuracy_failed",
}


def state_of_status(status: str) -> CandidateState:
    """The candidate state for an isolation outcome word (anything unknown is a crash)."""
    for state, word in _CHILD_STATUS.items():
        if word == status:
            return state
    return CandidateState.CRASHED


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildResult:
    """What came back from a candidate's child process, classified by the parent.

    ``state`` is COMPLETE when the child built and measured (the accuracy gate is still to be
    applied), DUPLICATE when the artifact equals ``duplicate_of``'s, or the failure state.
    """

    state: CandidateState
    error: str = ""
    phase: str = ""
    phase_times: dict[str, float] = field(default_factory=dict)
    effective_route: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    artifact: str | None = None
    sha256: str | None = None
    artifact_key: str | None = None
    size: int | None = None
    build_time_s: float | None = None
    duplicate_of: int | None = None
    latency: LatencyStats | None = None
    samples_ms: tuple[float, ...] = ()
    telemetry: dict[str, Any] = field(default_factory=dict)
    measure_time_s: float | None = None
    task_metric: float | None = None
    task_details: dict[str, float] = field(default_factory=dict)
    task_error: str | None = None
    profile: dict[str, Any] = field(default_factory=dict)
    shapes: tuple[ShapeLatency, ...] = ()

    @property
    def ok(self) -> bool:
        return self.state is CandidateState.COMPLETE

    def replace(self, **changes: Any) -> ChildResult:
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["state"] = self.state.value
        data["status"] = _CHILD_STATUS.get(self.state, "crashed")
        data["latency"] = self.latency.to_json() if self.latency else None
        data["samples_ms"] = list(self.samples_ms)
        data["shapes"] = [s.to_json() for s in self.shapes]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChildResult:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        state = data.get("state")
        kw["state"] = CandidateState(state) if state else state_of_status(data.get("status", "ok"))
        if kw.get("latency") is not None:
            kw["latency"] = LatencyStats.from_json(kw["latency"])
        kw["samples_ms"] = tuple(float(s) for s in kw.get("samples_ms") or ())
        kw["shapes"] = tuple(ShapeLatency.from_json(s) for s in kw.get("shapes") or ())
        return cls(**kw)
