"""Reproduce a candidate outside gptuner: a ``trtexec`` command and a Python snippet.

Both reproduce the build gptuner ran (:func:`gptuner_core.backends.tensorrt.build.build_engine`):

* the same optimization profiles: the ``profiles`` option, else the dataset's shape for each
  dynamic input (``feed_shapes``), all in ONE profile (one ``--minShapes/--optShapes/--maxShapes``
  set; one ``create_optimization_profile`` in the snippet);
* the same model file: gptuner's precision knob is an ONNX transform that writes
  ``model.<precision>.onnx`` (:func:`build.converted_model_path`); both outputs run that transform
  first, in the current directory, and then use that file;
* the parser gets the model path, so models with external weights parse.

The shell line is quoted with :func:`shlex.join`, so the route survives any shell
(``--setBuildRoute='-a=on -b=2'``).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from gptuner_core.backends.tensorrt import trtexec_protocol as proto
from gptuner_core.backends.tensorrt.build import Profile
from gptuner_core.backends.tensorrt.build import converted_model_path
from gptuner_core.backends.tensorrt.build import onnx_input_specs
from gptuner_core.backends.tensorrt.build import parse_profiles
from gptuner_core.backends.tensorrt.build import resolve_profiles
from gptuner_core.backends.tensorrt.precision import OWN_PREFIX
from gptuner_core.backends.tensorrt.precision import PRECISION
from gptuner_core.backends.tensorrt.route_check import split_route
from gptuner_core.errors import GptunerError
from gptuner_core.routes import Route


Shapes = dict[str, tuple[int, ...]]


def repro_profiles(model: Path, options: dict[str, Any], feed_shapes: Shapes | None) -> tuple[dict[str, Profile], str]:
    """``(profiles, note)``: what the build would use; ``note`` says what could not be resolved."""
    explicit = parse_profiles(options.get("profiles") or {})
    try:
        specs = onnx_input_specs(model)
    except GptunerError:
        return explicit, ""  # model not readable here: the explicit profiles are all we know
    try:
        return resolve_profiles(specs, explicit, feed_shapes), ""
    except GptunerError as exc:
        return explicit, f"incomplete: {exc}"


def _precision(route: Route) -> tuple[Route, str]:
    trt_route, own = split_route(route, OWN_PREFIX)
    return trt_route, own.get(PRECISION, "fp32") or "fp32"


def trtexec_argv(
    model: Path,
    route: Route,
    options: dict[str, Any],
    *,
    trtexec: str = "trtexec",
    engine: str = "engine.plan",
    feed_shapes: Shapes | None = None,
) -> list[str]:
    """The trtexec child argv of this candidate (the converted model when precision is not fp32)."""
    trt_route, precision = _precision(route)
    onnx = model if precision == "fp32" else converted_model_path(Path("."), precision)
    profiles, _ = repro_profiles(model, options, feed_shapes)
    flags = proto.build_flags(options, profiles, None)
    flags += list(options.get("extra_args") or [])
    return proto.child_argv(trtexec, onnx, str(trt_route), Path(engine), None, flags)


def _convert_line(model: Path, precision: str, calibration: str) -> str:
    code = (
        "from pathlib import Path; "
        "from gptuner_core.backends.tensorrt.precision import apply_precision; "
        f"apply_precision(Path({str(model)!r}), {precision!r}, Path('.'), {calibration})"
    )
    return shlex.join(["python", "-c", code])


def shell_command(model: Path, route: Route, options: dict[str, Any], **kw: Any) -> str:
    """``[convert &&] trtexec ...``, shell-quoted."""
    line = shlex.join(trtexec_argv(model, route, options, **kw))
    _, precision = _precision(route)
    if precision == "fp32":
        return line
    calibration = "dict(__import__('numpy').load('CALIBRATION.npz'))" if precision == "int8_qdq" else "None"
    return f"{_convert_line(model, precision, calibration)} && {line}"


def python_snippet(
    model: Path, route: Route, options: dict[str, Any], feed_shapes: Shapes | None = None
) -> str:
    """A standalone TensorRT Python script doing what :func:`build.build_engine` does."""
    trt_route, precision = _precision(route)
    lines = ["import tensorrt as trt", ""]
    if precision != "fp32":
        calibration = "CALIBRATION_ARRAYS" if precision == "int8_qdq" else "None"
        lines = [
            "from pathlib import Path",
            "from gptuner_core.backends.tensorrt.precision import apply_precision",
            "import tensorrt as trt",
            "",
            f"# {PRECISION}={precision} is an ONNX transform (TensorRT 11 is strongly typed)",
            f"onnx_path = str(apply_precision(Path({str(model)!r}), {precision!r}, Path('.'), calibration={calibration}))",
        ]
    else:
        lines.append(f"onnx_path = {str(model)!r}")
    lines += [
        "logger = trt.Logger(trt.Logger.WARNING)",
        "builder = trt.Builder(logger)",
        "network = builder.create_network(0)",
        "parser = trt.OnnxParser(network, logger)",
        "# the path lets the parser find external weights (models > 2 GB)",
        "assert parser.parse_from_file(onnx_path), [str(parser.get_error(i)) for i in range(parser.num_errors)]",
        "config = builder.create_builder_config()",
    ]
    ws = int(options.get("workspace_mb", 0) or 0)
    if ws:
        lines.append(f"config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, {ws} << 20)")
    lines.append(f"config.builder_optimization_level = {int(options.get('opt_level', 3))}")
    lines.append("config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED")
    profiles, note = repro_profiles(model, options, feed_shapes)
    if note:
        lines.append(f"# {note}")
    if profiles:
        lines.append("profile = builder.create_optimization_profile()")
        lines += [f"profile.set_shape({name!r}, {p.min}, {p.opt}, {p.max})" for name, p in profiles.items()]
        lines.append("assert config.add_optimization_profile(profile) >= 0, 'invalid optimization profile'")
    lines += [
        f"config.build_route = {str(trt_route)!r}",
        "print('build_route reads back:', repr(config.build_route))",
        "plan = builder.build_serialized_network(network, config)",
        "assert plan is not None, 'build failed (see log)'",
        "with open('engine.plan', 'wb') as f:",
        "    f.write(plan)",
    ]
    return "\n".join(lines) + "\n"


def repro_commands(
    model: Path, route: Route, options: dict[str, Any], *, feed_shapes: Shapes | None = None
) -> dict[str, str]:
    trtexec = str(options.get("trtexec") or "trtexec")
    out = {
        "shell": shell_command(model, route, options, trtexec=trtexec, feed_shapes=feed_shapes),
        "python": python_snippet(model, route, options, feed_shapes),
    }
    _, note = repro_profiles(model, options, feed_shapes)
    if note:
        out["note"] = f"shapes {note}"
    return out
