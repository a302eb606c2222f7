"""Study configuration: everything needed to run (and resume) a tuning study."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gptuner_core.errors import ConfigError


METRICS = ("l0", "l1", "l2", "lInf", "cos")


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyConfig:
    """A study's configuration, stored in the study and reused by ``--continue``.

    Attributes:
        model: path of the model file (ONNX, .pt2, or ``module:factory`` for the torch backend).
        backend: registry name, or ``module:Class`` for a backend outside the registry.
        expression: the tunable expression (trtexec grammar).
        search: strategy name; ``strategy_options`` its options.
        dataset: ``.npz`` of named inputs (+ optional ``labels``); ``None`` synthesizes inputs.
        batch_size: rows per inference for accuracy and for the latency measurement.
        metric/atol/rtol/epsilon: the element-wise accuracy gate (``epsilon=None`` disables it).
        task_metric/max_task_drop: ``"top1"`` or ``"module:function"`` and the allowed drop.
        max_candidates/time_budget_s/target_speedup: budgets (``None`` = unlimited).
        build_timeout_s/measure_timeout_s: per-candidate timeouts (separate phases).
        measurement: keyword arguments of ``measurement.SamplingSettings``.
        revalidate_top_k/revalidate_rounds/min_effect: interleaved re-validation before a winner.
        drift_every: re-measure the default route every N candidates (0 = never).
        warm_start: earlier study folders whose best routes (same knob database or model
            family) are proposed right after the default route.
    """

    model: str
    backend: str = "onnxruntime"
    backend_options: dict[str, Any] = field(default_factory=dict)
    expression: str = ""
    search: str = "fast"
    strategy_options: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    dataset: str | None = None
    batch_size: int = 1
    metric: str = "l2"
    atol: float = 1e-5
    rtol: float = 1e-5
    epsilon: float | None = None
    task_metric: str | None = None
    max_task_drop: float | None = None
    max_candidates: int | None = None
    time_budget_s: float | None = None
    target_speedup: float | None = None
    build_timeout_s: float = 600.0
    measure_timeout_s: float = 300.0
    measurement: dict[str, Any] = field(default_factory=dict)
    revalidate_top_k: int = 3
    revalidate_rounds: int = 5
    min_effect: float = 0.01
    drift_every: int = 10
    keep_artifacts: bool = True
    output: str | None = None
    warm_start: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            msg = f"accuracy metric must be one of {list(METRICS)} (got {self.metric!r})"
            raise ConfigError(msg)
        if self.epsilon is not None and not self.epsilon > 0:
            msg = f"--epsilon must be a positive number (got {self.epsilon!r})"
            raise ConfigError(msg)
        if self.batch_size < 1:
            msg = f"--batch-size must be >= 1 (got {self.batch_size})"
            raise ConfigError(msg)
        for name in ("max_candidates", "time_budget_s", "target_speedup"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                msg = f"{name} must be positive when given (got {value!r})"
                raise ConfigError(msg)
        for name in ("build_timeout_s", "measure_timeout_s"):
            if getattr(self, name) <= 0:
                msg = f"{name} must be positive (got {getattr(self, name)!r})"
                raise ConfigError(msg)
        if self.max_task_drop is not None and self.task_metric is None:
            msg = "--max-task-drop needs --task-metric (top1 or module:function)"
            raise ConfigError(msg)

    @property
    def model_path(self) -> Path:
        return Path(self.model)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StudyConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            msg = f"study configuration has unknown field(s) {unknown} (known: {sorted(names)})"
            raise ConfigError(msg)
        data = dict(data)
        if "warm_start" in data:
            data["warm_start"] = tuple(data["warm_start"] or ())
        return cls(**data)

    def replace(self, **changes: Any) -> StudyConfig:
        return dataclasses.replace(self, **changes)
