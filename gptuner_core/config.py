"""Study configuration: everything needed to run (and resume) a tuning study."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from gptuner_core.accuracy import AccuracySettings
    from gptuner_core.engine.scale.scale_out import ScaleOut

METRICS = ("l0", "l1", "l2", "lInf", "cos")

#: the ``gptuner tune`` flag of each field, so messages name what the user typed
FLAGS = {
    "batch_size": "--batch-size", "epsilon": "--epsilon", "atol": "--atol", "rtol": "--rtol",
    "max_task_drop": "--max-task-drop", "max_candidates": "--max-candidates",
    "time_budget_s": "--time-budget", "target_speedup": "--target-speedup", "device_wait_s": "--device-wait",
    "build_timeout_s": "--build-timeout", "measure_timeout_s": "--measure-timeout",
    "revalidate_top_k": "--revalidate-top-k", "revalidate_rounds": "--revalidate-rounds",
    "min_effect": "--min-effect", "drift_every": "--drift-every", "seed": "--seed",
    "profile_runs": "--profile-runs", "build_workers": "--build-workers", "workers": "--workers",
    "metric": "--metric", "task_metric": "--task-metric", "measurement": "--measure-option",
    "measure_shapes": "--measure-shapes", "shape_objective": "--shape-objective",
    "keep_artifacts": "--keep-artifacts",
}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_number(cfg: StudyConfig, name: str, *, low: float | None, low_ok: bool,
                  high: float | None = None, integer: bool = False, optional: bool = False) -> None:
    value = getattr(cfg, name)
    if value is None and optional:
        return
    flag = FLAGS.get(name, name)
    kind = "an integer" if integer else "a finite number"
    bounds = []
    if low is not None:
        bounds.append(f"{'>=' if low_ok else '>'} {low:g}")
    if high is not None:
        bounds.append(f"< {high}" if integer else f"< {high:g}")
    expected = f"{kind} {' and '.join(bounds)}".strip()
    ok = _is_number(value) and math.isfinite(value) and (not integer or float(value).is_integer())
    if ok and low is not None:
        ok = value >= low if low_ok else value > low
    if ok and high is not None:
        ok = value < high
    if not ok:
        msg = f"{flag} must be {expected} (got {value!r})"
        raise ConfigError(msg)


def _check_task_metric(spec: str) -> None:
    """Refuse a task metric that cannot resolve, without running any of its code."""
    import importlib.util

    from gptuner_core.accuracy.task import _check_spec_format

    module, func = _check_spec_format(spec)
    if not module:
        return
    from gptuner_core.config_checks import check_defines

    if module.endswith(".py"):
        if not Path(module).is_file():
            msg = f"--task-metric {spec!r}: file '{module}' not found (expected path/to/metrics.py:function)"
            raise ConfigError(msg)
        check_defines(Path(module), func, f"--task-metric {spec!r}")
        return
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        found = None
        reason = str(exc)
    else:
        reason = "no such module"
    if found is None:
        msg = f"--task-metric {spec!r}: cannot find module '{module}' ({reason}); expected 'top1' or module:function"
        raise ConfigError(msg)
    if found.origin and found.origin.endswith(".py"):
        check_defines(Path(found.origin), func, f"--task-metric {spec!r}")


def _check_measurement(options: dict[str, Any]) -> None:
    import dataclasses

    from gptuner_core.measurement import SamplingSettings

    names = sorted(f.name for f in dataclasses.fields(SamplingSettings))
    unknown = sorted(set(options) - set(names))
    if unknown:
        msg = f"--measure-option: unknown setting(s) {unknown} (allowed: {names})"
        raise ConfigError(msg)
    for key, value in options.items():
        if _is_number(value) and not math.isfinite(value):
            msg = f"--measure-option {key} must be a finite number (got {value!r})"
            raise ConfigError(msg)
    try:
        SamplingSettings(**options)
    except ConfigError as exc:
        msg = f"--measure-option: {exc}"
        raise ConfigError(msg) from None
    except (TypeError, ValueError) as exc:
        msg = f"--measure-option: {exc}"
        raise ConfigError(msg) from None


def check_measurement(options: dict[str, Any]) -> dict[str, Any]:
    """``--measure-option`` settings checked alone, for commands that check them first (``gate``)."""
    _check_measurement(options)
    return options


def _check_inputs(cfg: StudyConfig) -> None:
    """The input options parse (names are checked against the model when the study opens)."""
    from gptuner_core.shapes import parse_batch_axes
    from gptuner_core.shapes import parse_profile
    from gptuner_core.shapes import parse_value_ranges

    if cfg.shapes:
        parse_profile(shapes=cfg.shapes)
    if cfg.batch_axes:
        parse_batch_axes(cfg.batch_axes)
    if cfg.input_ranges:
        parse_value_ranges(cfg.input_ranges)
    _check_measure_shapes(cfg)
    if cfg.calibration is not None and not Path(cfg.calibration).is_file():
        msg = f"--calibration '{cfg.calibration}' is not a file (expected an .npz of named inputs)"
        raise ConfigError(msg)


def _check_measure_shapes(cfg: StudyConfig) -> None:
    """Each ``--measure-shapes`` profile parses, none twice; the objective fits their number."""
    from gptuner_core.measurement.shape_objective import ShapeObjective
    from gptuner_core.shapes import parse_shapes
    from gptuner_core.shapes import shape_label

    if isinstance(cfg.measure_shapes, str) or not all(isinstance(t, str) for t in cfg.measure_shapes):
        msg = f"--measure-shapes takes shape profiles such as x:1x16 (got {cfg.measure_shapes!r})"
        raise ConfigError(msg)
    labels = [shape_label(parse_shapes(t, option="--measure-shapes")) for t in cfg.measure_shapes]
    twice = sorted({lb for lb in labels if labels.count(lb) > 1})
    if twice:
        msg = f"--measure-shapes: shape profile(s) {twice} given twice (expected distinct shapes)"
        raise ConfigError(msg)
    ShapeObjective.parse(cfg.shape_objective, shapes=max(len(labels), 1))
    if labels and cfg.normalize:
        msg = (
            "--normalize re-measures the default at one shape on each worker's device, so it cannot "
            f"put {len(labels)} --measure-shapes profiles on one scale (expected one of the two; "
            "found both)"
        )
        raise ConfigError(msg)


def validate_config(cfg: StudyConfig) -> None:
    """A new study's checks (the name the dashboard's form looks for): :func:`validate` and
    :func:`require_gate`."""
    validate(cfg)
    require_gate(cfg)


def require_gate(cfg: StudyConfig) -> None:
    """A new study needs an accuracy gate (an epsilon, one per output, or a task metric with an
    allowed drop) unless ``no_gate`` asks explicitly for none (raises ConfigError).

    Only new studies: a stored configuration without a gate still loads and continues. A
    replay study (``backend="replay"``) keeps the recording's own accuracy verdicts.
    """
    from gptuner_core.accuracy import require_gate as require

    if cfg.backend == "replay":
        return
    require(cfg.accuracy_settings())


def validate(cfg: StudyConfig) -> None:
    """Every setting of a study, checked before anything is written: one line saying what was
    wrong, what is expected and what was found (raises ConfigError)."""
    if cfg.metric not in METRICS:
        msg = f"--metric must be one of {list(METRICS)} (got {cfg.metric!r})"
        raise ConfigError(msg)
    _check_number(cfg, "epsilon", low=0, low_ok=False, optional=True)
    _check_number(cfg, "atol", low=0, low_ok=True)
    _check_number(cfg, "rtol", low=0, low_ok=True)
    _check_number(cfg, "batch_size", low=1, low_ok=True, integer=True)
    _check_number(cfg, "seed", low=0, low_ok=True, high=2**32, integer=True)  # numpy's legacy seeds
    _check_number(cfg, "max_candidates", low=1, low_ok=True, integer=True, optional=True)
    _check_number(cfg, "time_budget_s", low=0, low_ok=False, optional=True)
    _check_number(cfg, "device_wait_s", low=0, low_ok=True, optional=True)
    _check_number(cfg, "target_speedup", low=0, low_ok=False, optional=True)
    _check_number(cfg, "build_timeout_s", low=0, low_ok=False)
    _check_number(cfg, "measure_timeout_s", low=0, low_ok=False)
    _check_number(cfg, "revalidate_top_k", low=0, low_ok=True, integer=True)
    _check_number(cfg, "revalidate_rounds", low=2, low_ok=True, integer=True)
    _check_number(cfg, "min_effect", low=0, low_ok=True, high=1)
    _check_number(cfg, "drift_every", low=0, low_ok=True, integer=True)
    _check_number(cfg, "profile_runs", low=0, low_ok=True, integer=True)
    _check_number(cfg, "max_task_drop", low=0, low_ok=True, optional=True)
    _check_number(cfg, "build_workers", low=0, low_ok=True, integer=True)
    _check_number(cfg, "workers", low=1, low_ok=True, integer=True)
    if cfg.max_task_drop is not None and cfg.task_metric is None:
        msg = "--max-task-drop needs --task-metric (top1, detection, topk, tokens or module:function)"
        raise ConfigError(msg)
    if cfg.task_metric is not None:
        _check_task_metric(cfg.task_metric)
    _check_inputs(cfg)
    from gptuner_core.config_checks import check_settings

    check_settings(cfg)  # output names, strategy options, warm-start sources, Ray address, rows
    cfg.scale_out().validated()
    cfg.accuracy_settings()  # the gate's own checks (per-output epsilons, task output)
    if not isinstance(cfg.measurement, dict):
        msg = f"measurement must be a mapping of sampling settings (got {type(cfg.measurement).__name__})"
        raise ConfigError(msg)
    _check_measurement(cfg.measurement)
    _check_keep_artifacts(cfg.keep_artifacts)


def _check_keep_artifacts(value: Any) -> None:
    from gptuner_core.engine.files.artifacts import KEEP_MODES

    if value not in KEEP_MODES:
        msg = f"--keep-artifacts must be one of {list(KEEP_MODES)} (got {value!r})"
        raise ConfigError(msg)


#: what a recording's configuration holds beside a study's settings (``Recording.config``: the
#: kind of space, the model family, what an import counted)
RECORDING_FIELDS = ("space", "model_family", "imported")


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
        max_candidates/time_budget_s/target_speedup: budgets (``None`` = unlimited); time spent
            waiting for a device another study holds is not tuning time (``Progress.waited_s``).
        device_wait_s: the longest wait for that device at one time (``None``: for ever); past
            it the study fails, saying who holds the device.
        build_timeout_s/measure_timeout_s: per-candidate timeouts (separate phases).
        measurement: keyword arguments of ``measurement.SamplingSettings``.
        revalidate_top_k/revalidate_rounds/min_effect: sequential interleaved re-validation before a
            winner (``revalidate_rounds`` is its round budget; it stops once decided).
        drift_every: re-measure the default route every N candidates (0 = never).
        shapes: trtexec-style input shapes (``name:1x3x224x224,other:...``) for synthetic
            inputs and dynamic dims; batch_axes: each input's batch axis (``state:1,sr:none``);
            input_ranges: value ranges of synthetic inputs (``input_ids:0..30522``).
        calibration: a separate ``.npz`` for quantization calibration (default: the dataset).
        measure_shapes/shape_objective: latency measured at each of these shape profiles
            (``x:1x16``, ``x:32x16``; trtexec syntax) instead of the first batch's shape, ranked
            by ``minimax`` (the worst shape's speed-up) or ``weighted:W1,W2`` (a traffic mix).
        gate_outputs/output_epsilons/task_output/no_gate: the gate aimed at chosen outputs, an
            epsilon per output, the output ``top1`` reads, and an explicit "no gate".
        build_workers/ray/workers/normalize: scale-out (``engine.scale.scale_out.ScaleOut``): builds
            ahead in K processes (0 = chosen from cores and memory), Ray workers, one per device,
            and speed-ups against each device's own default route.
        keep_artifacts: whose build outputs stay (``engine.files.artifacts``): ``top-k`` (the default's
            and the re-validation contenders'), ``best`` (the default's and the winner's once
            decided) or ``all``; ``true``/``false`` of older studies read as ``all``/``best``.
        profile_runs: runs of the per-layer profile captured after each candidate's latency
            samples, in a separate session (0 = no profile).
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
    device_wait_s: float | None = None
    build_timeout_s: float = 600.0
    measure_timeout_s: float = 300.0
    measurement: dict[str, Any] = field(default_factory=dict)
    revalidate_top_k: int = 3
    revalidate_rounds: int = 12
    min_effect: float = 0.01
    drift_every: int = 10
    keep_artifacts: str = "top-k"
    output: str | None = None
    warm_start: tuple[str, ...] = ()
    profile_runs: int = 10
    shapes: str | None = None
    batch_axes: str | None = None
    input_ranges: str | None = None
    calibration: str | None = None
    measure_shapes: tuple[str, ...] = ()
    shape_objective: str = "minimax"
    gate_outputs: tuple[str, ...] = ()
    output_epsilons: dict[str, float] = field(default_factory=dict)
    task_output: str | None = None
    no_gate: bool = False
    build_workers: int = 1
    ray: str | None = None
    workers: int = 1
    normalize: bool = False

    def __post_init__(self) -> None:
        from gptuner_core.engine.files.artifacts import keep_mode

        object.__setattr__(self, "keep_artifacts", keep_mode(self.keep_artifacts))  # legacy bool
        validate(self)

    def scale_out(self) -> ScaleOut:
        from gptuner_core.engine.scale.scale_out import ScaleOut

        return ScaleOut(build_workers=self.build_workers, ray=self.ray, workers=self.workers,
                        normalize=self.normalize)

    def accuracy_settings(self) -> AccuracySettings:
        """The accuracy gate of this study."""
        from gptuner_core.accuracy import AccuracySettings

        return AccuracySettings(
            metric=self.metric, atol=self.atol, rtol=self.rtol, epsilon=self.epsilon,
            task_metric=self.task_metric, max_task_drop=self.max_task_drop,
            task_output=self.task_output, outputs=tuple(self.gate_outputs) or None,
            output_epsilons=dict(self.output_epsilons), no_gate=self.no_gate,
        )

    @property
    def model_path(self) -> Path:
        return Path(self.model)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def settings_of(cls, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored study configuration without what a recording written as a study keeps beside
        its settings (``gptuner import --study``: :data:`RECORDING_FIELDS`), so that the study can
        be continued and re-tuned as one tuned with ``--backend replay`` can (issue 43)."""
        return {k: v for k, v in stored.items() if k not in RECORDING_FIELDS}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StudyConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            msg = f"study configuration has unknown field(s) {unknown} (known: {sorted(names)})"
            raise ConfigError(msg)
        data = dict(data)
        if not isinstance(data.get("model"), str) or not data["model"]:
            msg = f"study configuration needs 'model' (a model file or module:factory; got {data.get('model')!r})"
            raise ConfigError(msg)
        for name in ("warm_start", "gate_outputs", "measure_shapes"):
            if name in data:
                value = data[name] or ()
                if isinstance(value, str) or not isinstance(value, list | tuple):
                    msg = f"study configuration field '{name}' must be a list (got {value!r})"
                    raise ConfigError(msg)
                data[name] = tuple(value)
        return cls(**data)

    def replace(self, **changes: Any) -> StudyConfig:
        return dataclasses.replace(self, **changes)
