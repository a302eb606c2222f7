"""Reproduce a candidate outside gptuner: a ``trtexec`` command and a Python snippet.

The shell line is quoted with :func:`shlex.join`, so the route survives any shell
(``--setBuildRoute='-a=on -b=2'``). gptuner's own precision knob is not a TensorRT knob: when it
is set, both outputs first convert the model with gptuner (the shell line then uses the converted
file).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from gptuner_core.backends.tensorrt import trtexec_protocol as proto
from gptuner_core.backends.tensorrt.build import parse_profiles
from gptuner_core.backends.tensorrt.precision import OWN_PREFIX
from gptuner_core.backends.tensorrt.precision import PRECISION
from gptuner_core.backends.tensorrt.route_check import split_route
from gptuner_core.routes import Route


def trtexec_argv(
    model: Path,
    route: Route,
    options: dict[str, Any],
    *,
    trtexec: str = "trtexec",
    engine: str = "engine.plan",
) -> list[str]:
    trt_route, own = split_route(route, OWN_PREFIX)
    precision = own.get(PRECISION, "fp32") or "fp32"
    onnx = model if precision == "fp32" else model.with_name(f"{model.stem}.{precision}.onnx")
    profiles = parse_profiles(options.get("profiles") or {})
    flags = proto.build_flags(options, profiles, None)
    flags += list(options.get("extra_args") or [])
    return proto.child_argv(trtexec, onnx, str(trt_route), Path(engine), None, flags)


def shell_command(model: Path, route: Route, options: dict[str, Any], **kw: Any) -> str:
    return shlex.join(trtexec_argv(model, route, options, **kw))


def python_snippet(model: Path, route: Route, options: dict[str, Any]) -> str:
    trt_route, own = split_route(route, OWN_PREFIX)
    precision = own.get(PRECISION, "fp32") or "fp32"
    lines = [
        "import tensorrt as trt",
        "",
    ]
    onnx = str(model)
    if precision != "fp32":
        lines = [
            "from pathlib import Path",
            "from gptuner_core.backends.tensorrt.precision import apply_precision",
            "import tensorrt as trt",
            "",
            f"# {PRECISION}={precision} is an ONNX transform (TensorRT 11 is strongly typed)",
            f"onnx_path = apply_precision(Path({onnx!r}), {precision!r}, Path('.'), calibration=None)",
        ]
        if precision == "int8_qdq":
            lines[-1] = f"onnx_path = apply_precision(Path({onnx!r}), {precision!r}, Path('.'), calibration=CALIBRATION_ARRAYS)"
    else:
        lines.append(f"onnx_path = {onnx!r}")
    lines += [
        "logger = trt.Logger(trt.Logger.WARNING)",
        "builder = trt.Builder(logger)",
        "network = builder.create_network(0)",
        "parser = trt.OnnxParser(network, logger)",
        "with open(onnx_path, 'rb') as f:",
        "    assert parser.parse(f.read()), [str(parser.get_error(i)) for i in range(parser.num_errors)]",
        "config = builder.create_builder_config()",
    ]
    ws = int(options.get("workspace_mb", 0) or 0)
    if ws:
        lines.append(f"config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, {ws} << 20)")
    lines.append(f"config.builder_optimization_level = {int(options.get('opt_level', 3))}")
    for name, p in parse_profiles(options.get("profiles") or {}).items():
        lines += [
            "profile = builder.create_optimization_profile()",
            f"profile.set_shape({name!r}, {p.min}, {p.opt}, {p.max})",
            "config.add_optimization_profile(profile)",
        ]
    lines += [
        f"config.build_route = {str(trt_route)!r}",
        f"assert config.build_route == {str(trt_route)!r}, 'TensorRT ignored the route (see log)'",
        "plan = builder.build_serialized_network(network, config)",
        "assert plan is not None, 'build failed (see log)'",
        "with open('engine.plan', 'wb') as f:",
        "    f.write(plan)",
    ]
    return "\n".join(lines) + "\n"


def repro_commands(model: Path, route: Route, options: dict[str, Any]) -> dict[str, str]:
    trtexec = str(options.get("trtexec") or "trtexec")
    return {
        "shell": shell_command(model, route, options, trtexec=trtexec),
        "python": python_snippet(model, route, options),
    }
