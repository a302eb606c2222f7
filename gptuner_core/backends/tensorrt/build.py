"""Build one route into a serialized engine with the TensorRT 11 Python API.

Flow (reference §7): logger -> builder -> network (strongly typed, always) -> ONNX parser with
every parser error reported -> builder config (workspace limit, optimization profiles for dynamic
inputs, builder optimization level, ``ProfilingVerbosity.DETAILED``) -> ``config.build_route``
(validated by us first, read back after) -> timing cache -> ``build_serialized_network`` (None ->
:class:`BackendError` with the logger's errors) -> engine file + sha256 -> engine-inspector JSON
saved beside it (``info["layers_path"]``).

The pure parts (input specs from ONNX, profile resolution, option checks) need no TensorRT and are
unit-tested; :func:`build_engine` runs only where TensorRT and a GPU exist.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends._base import BuildResult
from gptuner_core.backends._base import TensorSpec
from gptuner_core.backends.tensorrt import inspector
from gptuner_core.backends.tensorrt import timing_cache
from gptuner_core.backends.tensorrt.precision import OWN_PREFIX
from gptuner_core.backends.tensorrt.precision import PRECISION
from gptuner_core.backends.tensorrt.precision import apply_precision
from gptuner_core.backends.tensorrt.route_check import check_readback
from gptuner_core.backends.tensorrt.route_check import split_route
from gptuner_core.backends.tensorrt.route_check import validate_route
from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.routes import Route


ENGINE_NAME = "engine.plan"
LAYERS_NAME = "layers.json"
TIMING_CACHE_NAME = "tensorrt_timing.cache"


# -- options ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """Min/opt/max shape of one dynamic input."""

    min: tuple[int, ...]
    opt: tuple[int, ...]
    max: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildOptions:
    workspace_mb: int = 0
    opt_level: int = 3
    timing_cache: str = "shared"
    timing_cache_path: str = ""
    profiles: dict[str, Profile] = field(default_factory=dict)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> BuildOptions:
        """Validate the backend options that concern the build."""
        ws = options.get("workspace_mb", 0)
        if not isinstance(ws, int) or isinstance(ws, bool) or ws < 0:
            msg = f"tensorrt option workspace_mb must be an integer >= 0 (0 = TensorRT default), got {ws!r}"
            raise ConfigError(msg)
        level = options.get("opt_level", 3)
        if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 5:
            msg = f"tensorrt option opt_level must be an integer 0-5, got {level!r}"
            raise ConfigError(msg)
        mode = options.get("timing_cache", "shared")
        if mode not in timing_cache.MODES:
            msg = f"tensorrt option timing_cache must be one of {list(timing_cache.MODES)}, got {mode!r}"
            raise ConfigError(msg)
        return cls(
            workspace_mb=ws,
            opt_level=level,
            timing_cache=mode,
            timing_cache_path=str(options.get("timing_cache_path", "") or ""),
            profiles=parse_profiles(options.get("profiles") or {}),
        )


def _shape(value: Any, where: str) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value
    ):
        msg = f"tensorrt option profiles: {where} must be a list of positive integers, got {value!r}"
        raise ConfigError(msg)
    return tuple(value)


def parse_profiles(raw: Any) -> dict[str, Profile]:
    """``{"x": {"min": [1, 3], "opt": [8, 3], "max": [32, 3]}}`` -> ``{"x": Profile}``."""
    if not isinstance(raw, dict):
        msg = (
            "tensorrt option profiles must map input names to {min, opt, max} shapes, "
            f"got {type(raw).__name__}"
        )
        raise ConfigError(msg)
    out = {}
    for name, spec in raw.items():
        if not isinstance(spec, dict) or set(spec) != {"min", "opt", "max"}:
            got = sorted(spec) if isinstance(spec, dict) else type(spec).__name__
            msg = f"tensorrt option profiles['{name}'] must have exactly min, opt, max (got {got})"
            raise ConfigError(msg)
        lo, mid, hi = (_shape(spec[k], f"profiles['{name}'].{k}") for k in ("min", "opt", "max"))
        if not len(lo) == len(mid) == len(hi):
            msg = f"tensorrt option profiles['{name}']: min/opt/max ranks differ ({len(lo)}, {len(mid)}, {len(hi)})"
            raise ConfigError(msg)
        if not all(a <= b <= c for a, b, c in zip(lo, mid, hi, strict=True)):
            msg = f"tensorrt option profiles['{name}']: need min <= opt <= max per dimension (got {list(lo)}, {list(mid)}, {list(hi)})"
            raise ConfigError(msg)
        out[name] = Profile(min=lo, opt=mid, max=hi)
    return out


# -- model inspection without TensorRT --------------------------------------------------------
def onnx_input_specs(model: Path) -> list[TensorSpec]:
    """Graph inputs (initializers excluded) with numpy dtype names and ``None``/name for dynamic dims."""
    import onnx
    from onnx import helper

    try:
        m = onnx.load(str(model), load_external_data=False)
    except FileNotFoundError:
        msg = f"model '{model}': file not found"
        raise BackendError(msg) from None
    except Exception as exc:
        msg = f"model '{model}': not a readable ONNX model ({type(exc).__name__}: {exc})"
        raise BackendError(msg) from None
    inits = {i.name for i in m.graph.initializer}
    specs = []
    for value in m.graph.input:
        if value.name in inits:
            continue
        tt = value.type.tensor_type
        try:
            dtype = str(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except Exception:  # noqa: BLE001 - exotic types keep their ONNX name
            dtype = onnx.TensorProto.DataType.Name(tt.elem_type).lower()
        dims: list[int | str | None] = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param:
                dims.append(d.dim_param)
            else:
                dims.append(None)
        specs.append(TensorSpec(name=value.name, dtype=dtype, shape=tuple(dims)))
    return specs


def resolve_profiles(
    specs: list[TensorSpec],
    profiles: dict[str, Profile],
    feed_shapes: dict[str, tuple[int, ...]] | None = None,
) -> dict[str, Profile]:
    """Profiles for every dynamic input: from the options, else the dataset's shape (min=opt=max).

    Raises :class:`BackendError` naming the inputs that have neither, and when a profile contradicts
    a static dimension of the model.
    """
    feed_shapes = feed_shapes or {}
    known = {s.name for s in specs}
    unknown = sorted(set(profiles) - known)
    if unknown:
        msg = f"tensorrt option profiles names unknown input(s) {unknown} (model inputs: {sorted(known)})"
        raise BackendError(msg)
    out: dict[str, Profile] = {}
    missing = []
    for spec in specs:
        dynamic = any(not isinstance(d, int) for d in spec.shape)
        if not dynamic:
            continue
        prof = profiles.get(spec.name)
        if prof is None and spec.name in feed_shapes:
            shape = tuple(int(d) for d in feed_shapes[spec.name])
            prof = Profile(min=shape, opt=shape, max=shape)
        if prof is None:
            dims = ", ".join("?" if d is None else str(d) for d in spec.shape)
            missing.append(f"'{spec.name}' [{dims}]")
            continue
        if len(prof.opt) != len(spec.shape):
            msg = f"profile for input '{spec.name}' has rank {len(prof.opt)}, the model's input has rank {len(spec.shape)} {list(spec.shape)}"
            raise BackendError(msg)
        for i, d in enumerate(spec.shape):
            if isinstance(d, int) and not (prof.min[i] == prof.opt[i] == prof.max[i] == d):
                msg = f"profile for input '{spec.name}' sets dimension {i} to {prof.min[i]}/{prof.opt[i]}/{prof.max[i]}, but the model fixes it to {d}"
                raise BackendError(msg)
        out[spec.name] = prof
    if missing:
        msg = (
            f"dynamic input(s) {', '.join(missing)} need an optimization profile: set the backend option "
            "profiles = {name: {min: [...], opt: [...], max: [...]}} or give the study a dataset"
        )
        raise BackendError(msg)
    return out


def shared_cache_path(workdir: Path, options: BuildOptions) -> Path:
    """The study-wide timing cache: the option, else ``STUDY/tensorrt_timing.cache``."""
    if options.timing_cache_path:
        return Path(options.timing_cache_path)
    study = workdir.parent.parent if workdir.parent.name == "candidates" else workdir.parent
    return study / TIMING_CACHE_NAME


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# -- the TensorRT build -----------------------------------------------------------------------
def make_logger(trt: Any) -> Any:
    """A ``trt.ILogger`` that keeps errors and warnings for the failure message."""

    class _Logger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.errors: list[str] = []
            self.warnings: list[str] = []

        def log(self, severity: Any, msg: str) -> None:
            if severity in (trt.ILogger.Severity.INTERNAL_ERROR, trt.ILogger.Severity.ERROR):
                self.errors.append(str(msg))
            elif severity == trt.ILogger.Severity.WARNING:
                self.warnings.append(str(msg))

    return _Logger()


def converted_model_path(workdir: Path, precision: str) -> Path:
    """Where the precision transform writes the model TensorRT parses: ``workdir/model.<p>.onnx``."""
    return workdir / f"model.{precision}.onnx"


def _parse_onnx(trt: Any, network: Any, logger: Any, model: Path) -> None:
    """Parse ``model``; the path goes with the bytes so external weights (> 2 GB models) resolve.

    Real signature (11.1-11.4): ``OnnxParser.parse(model: Buffer, path: str = None) -> bool``,
    "path: only required if the model has externally stored weights".
    """
    parser = trt.OnnxParser(network, logger)
    data = model.read_bytes()
    ok = parser.parse(data, str(model))
    if not ok:
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        detail = "; ".join(errors) or "no parser error reported"
        msg = f"TensorRT ONNX parser rejected '{model}': {detail}"
        raise BackendError(msg)


def _inspect(trt: Any, plan: Any, logger: Any) -> inspector.EngineInfo:
    runtime = trt.Runtime(logger)
    engine = runtime.deserialize_cuda_engine(plan)
    if engine is None:
        msg = "TensorRT could not deserialize the engine it just built: " + "; ".join(logger.errors[-5:])
        raise BackendError(msg)
    insp = engine.create_engine_inspector()
    text = insp.get_engine_information(trt.LayerInformationFormat.JSON)
    return inspector.parse_engine_information(text)


def add_profile(builder: Any, config: Any, profiles: dict[str, Profile]) -> int | None:
    """One optimization profile holding every dynamic input; its index (``None`` if no profile).

    ``IBuilderConfig.add_optimization_profile`` returns -1 for an invalid profile instead of
    raising, which would otherwise surface later as an unrelated build error.
    """
    if not profiles:
        return None
    profile = builder.create_optimization_profile()
    for name, p in profiles.items():
        profile.set_shape(name, p.min, p.opt, p.max)
    index = config.add_optimization_profile(profile)
    if index is None or int(index) < 0:
        shapes = "; ".join(f"'{n}' min {list(p.min)} opt {list(p.opt)} max {list(p.max)}" for n, p in profiles.items())
        msg = f"TensorRT rejected the optimization profile (add_optimization_profile returned {index}): {shapes}"
        raise BackendError(msg)
    return int(index)


def build_engine(
    model: Path,
    route: Route,
    workdir: Path,
    db: KnobDatabase,
    options: BuildOptions,
    *,
    calibration: dict[str, np.ndarray] | None = None,
) -> BuildResult:
    """Build ``route`` for ``model`` into ``workdir/engine.plan`` (needs TensorRT and a GPU)."""
    import tensorrt as trt

    trt_route, own_route = split_route(route, OWN_PREFIX)
    validate_route(trt_route, db)
    precision = own_route.get(PRECISION, "fp32") or "fp32"
    workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    onnx_path = apply_precision(model, precision, workdir, calibration)
    t_transform = time.perf_counter() - t0

    logger = make_logger(trt)
    builder = trt.Builder(logger)
    network = builder.create_network(0)  # strongly typed, always, in TensorRT 11
    _parse_onnx(trt, network, logger, onnx_path)
    config = builder.create_builder_config()
    if options.workspace_mb:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, options.workspace_mb << 20)
    config.builder_optimization_level = options.opt_level
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED

    feed_shapes = {k: tuple(v.shape) for k, v in (calibration or {}).items()}
    profiles = resolve_profiles(onnx_input_specs(onnx_path), options.profiles, feed_shapes)
    add_profile(builder, config, profiles)

    config.build_route = str(trt_route)
    readback = check_readback(trt_route, config.build_route, db)
    effective_trt = readback.effective

    shared = shared_cache_path(workdir, options) if options.timing_cache == "shared" else None
    start = timing_cache.read_locked(shared) if shared else b""
    timing_cache.attach(trt, config, start)

    t1 = time.perf_counter()
    plan = builder.build_serialized_network(network, config)
    t_build = time.perf_counter() - t1
    if plan is None:
        detail = "; ".join(logger.errors[-10:]) or "no error was logged"
        msg = f"TensorRT build failed for route {str(route)!r}: {detail}"
        raise BackendError(msg)

    engine_path = workdir / ENGINE_NAME
    engine_path.write_bytes(bytes(memoryview(plan)))
    cache_bytes = bytes(memoryview(config.get_timing_cache().serialize()))
    if shared is not None:
        timing_cache.merge_back(trt, config, shared)
    else:
        timing_cache.write_atomic(workdir / TIMING_CACHE_NAME, cache_bytes)

    info = _inspect(trt, plan, logger)
    layers_path = workdir / LAYERS_NAME
    layers_path.write_text(
        json.dumps({"layers": [x.to_json() for x in info.layers], **info.summary()}, indent=1),
        encoding="utf-8",
    )
    effective = " ".join(p for p in (effective_trt, str(own_route)) if p)
    return BuildResult(
        artifact=engine_path,
        effective_route=effective,
        info={
            "engine_sha256": sha256_file(engine_path),
            "engine_bytes": engine_path.stat().st_size,
            "layers_path": str(layers_path),
            "layers_summary": info.summary(),
            "precision": precision,
            "onnx_path": str(onnx_path),
            "timing_cache": options.timing_cache,
            "timing_cache_path": str(shared) if shared else str(workdir / TIMING_CACHE_NAME),
            "transform_s": round(t_transform, 4),
            "build_s": round(t_build, 4),
            "profiles": {k: {"min": list(p.min), "opt": list(p.opt), "max": list(p.max)} for k, p in profiles.items()},
            "warnings": logger.warnings[-20:],
            "route_readback": {"requested": str(trt_route), "read_back": effective_trt,
                               "differs": readback.differs, "notes": list(readback.notes)},
            "tensorrt_version": trt.__version__,
        },
    )
