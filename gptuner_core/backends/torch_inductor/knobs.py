"""The ``torch`` backend's knob database, in TensorRT's ``all_build_routes`` schema.

Three namespaces map onto the seed documents' decision points:

* ``-torch:mode`` — ``torch.compile``'s preset (``list_mode_options``): autotuning and CUDA graphs;
* ``-torch:precision`` — fp32 (PyTorch's defaults) / fp32_strict / tf32 / bf16 / fp16 (precision);
* ``-inductor:<config name>`` — one ``torch._inductor.config`` option each: fusion
  (``epilogue_fusion``, ``aggressive_fusion``), kernel selection (``max_autotune``,
  ``coordinate_descent_tuning``), layout and padding, CUDA graphs, freezing, split reductions.

Every Inductor knob is checked against the *installed* ``torch._inductor.config`` when the
database is made: a name that does not exist there (or is not a boolean) is dropped, and the
knob's default is the installed default, so the database is right for each PyTorch version.
Knobs that only change GPU (Triton) code are left out on the CPU, where they would do nothing,
and ``-torch:mode`` offers only the presets without CUDA graphs there.

Route semantics: ``-torch:mode`` is applied first as a preset; an ``-inductor:*`` knob written in
the route overrides the preset (``-torch:mode=max-autotune -inductor:triton.cudagraphs=off``
autotunes without CUDA graphs). Knobs a route does not name keep the preset's value, or the
installed default. The effective configuration is read back during compilation and reported as
the build's effective route.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gptuner_core.knobs import Knob
from gptuner_core.knobs import KnobDatabase


MODE = "-torch:mode"
PRECISION = "-torch:precision"
INDUCTOR_PREFIX = "-inductor:"

#: torch.compile modes offered, in order; only those the installed PyTorch knows are listed.
GPU_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
CPU_MODES = ("default", "max-autotune-no-cudagraphs")
GPU_PRECISIONS = ("fp32", "fp32_strict", "tf32", "bf16", "fp16")
CPU_PRECISIONS = ("fp32", "bf16", "fp16")

MODE_HELP = (
    "torch.compile mode, a preset of Inductor options applied before the -inductor:* knobs of the "
    "route (which override it). Offered here: "
)
MODE_MEANINGS = {
    "default": "default: no preset",
    "reduce-overhead": (
        "reduce-overhead: CUDA graphs (triton.cudagraphs=on) to remove kernel-launch overhead"
    ),
    "max-autotune": (
        "max-autotune: benchmark Triton/ATen candidates for GEMMs and convolutions and tune "
        "kernel block sizes (max_autotune=on, coordinate_descent_tuning=on) plus CUDA graphs"
    ),
    "max-autotune-no-cudagraphs": (
        "max-autotune-no-cudagraphs: autotuning (max_autotune=on, coordinate_descent_tuning=on, "
        "the latter only matters for Triton kernels) without CUDA graphs"
    ),
}
PRECISION_HELP = {
    "cuda": (
        "Numeric precision. fp32 (the default): PyTorch's own defaults, what plain torch.compile "
        "gives: float32 tensors, matmuls in strict fp32 (float32 matmul precision 'highest', "
        "torch.backends.cuda.matmul.allow_tf32 off) and cuDNN convolutions with TF32 tensor-core "
        "math (torch.backends.cudnn.allow_tf32 on). fp32_strict: strict IEEE fp32 everywhere (TF32 "
        "off for cuDNN convolutions too). tf32: TF32 for matmuls and convolutions "
        "(matmul.allow_tf32, cudnn.allow_tf32, float32 matmul precision 'high'). bf16 / fp16: the "
        "module's parameters and floating inputs are cast to bfloat16 / float16 (module.to(dtype)); "
        "outputs are cast back to float32. Anything but fp32 changes the outputs: check the "
        "accuracy gate."
    ),
    "cpu": (
        "Numeric precision. fp32: float32 everywhere. bf16 / fp16: the module's parameters and "
        "floating inputs are cast to bfloat16 / float16 (module.to(dtype)); outputs are cast back "
        "to float32. Lower precision changes the outputs: check the accuracy gate. (tf32 is a GPU "
        "tensor-core mode and is not offered on the CPU.)"
    ),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class InductorKnobSpec:
    """One boolean ``torch._inductor.config`` option exposed as ``-inductor:<config>=[on|off]``.

    The database lists the installed default first, then the other value.
    """

    config: str
    help: str
    devices: frozenset[str]

    @property
    def name(self) -> str:
        return f"{INDUCTOR_PREFIX}{self.config}"


_BOTH = frozenset({"cpu", "cuda"})
_GPU = frozenset({"cuda"})

#: Inductor options offered as knobs, in database order. Each help says what the option changes.
INDUCTOR_KNOBS: tuple[InductorKnobSpec, ...] = (
    InductorKnobSpec(
        config="max_autotune",
        help=(
            "Kernel selection: benchmark several implementations of each GEMM/convolution (Triton "
            "templates and ATen/cuBLAS on GPU; C++ GEMM templates on the CPU) and of pointwise and "
            "reduction kernels at build time, keeping the fastest. Much longer builds."
        ),
        devices=_BOTH,
    ),
    InductorKnobSpec(
        config="coordinate_descent_tuning",
        help=(
            "Kernel selection: after the heuristic choice, tune each Triton kernel's block sizes, "
            "warps and stages by coordinate descent (benchmarks at build time). GPU only."
        ),
        devices=_GPU,
    ),
    InductorKnobSpec(
        config="epilogue_fusion",
        help=(
            "Fusion: fuse pointwise ops that follow a GEMM/convolution template (bias, activation) "
            "into the template's epilogue instead of a separate kernel. Takes effect on template "
            "kernels, i.e. with max-autotune."
        ),
        devices=_BOTH,
    ),
    InductorKnobSpec(
        config="aggressive_fusion",
        help=(
            "Fusion: also fuse nodes that share no memory access but could be scheduled together "
            "(fewer, larger kernels; may hurt register pressure or locality)."
        ),
        devices=_BOTH,
    ),
    InductorKnobSpec(
        config="triton.cudagraphs",
        help=(
            "Launch: capture the compiled graph as a CUDA graph (CUDA graph trees) and replay it, "
            "removing per-kernel CPU launch overhead; needs static input shapes and addresses "
            "(inputs are copied into the graph's buffers). GPU only."
        ),
        devices=_GPU,
    ),
    InductorKnobSpec(
        config="freezing",
        help=(
            "Constant folding: treat parameters as constants (inference), fold BatchNorm into "
            "convolutions and pre-pack weights (oneDNN on the CPU), then compile the frozen graph."
        ),
        devices=_BOTH,
    ),
    InductorKnobSpec(
        config="layout_optimization",
        help=(
            "Memory layout: let Inductor switch convolution-heavy graphs to channels-last so "
            "convolutions avoid layout conversions (cuDNN tensor cores; oneDNN on the CPU)."
        ),
        devices=_BOTH,
    ),
    InductorKnobSpec(
        config="shape_padding",
        help=(
            "Padding: pad GEMM dimensions to multiples that suit tensor cores (pad_mm pass), when "
            "a benchmark says padding pays off. GPU only."
        ),
        devices=_GPU,
    ),
    InductorKnobSpec(
        config="split_reductions",
        help=(
            "Reductions: split a large reduction over few outputs into two kernels so it uses "
            "more of the GPU's SMs. GPU only (the C++ backend reduces in one kernel)."
        ),
        devices=_GPU,
    ),
)

ON_OFF = {"on": True, "off": False}


def bool_value(value: bool) -> str:
    return "on" if value else "off"


def _config_value(config: Any, dotted: str) -> tuple[bool, Any]:
    """``(exists, value)`` of a dotted ``torch._inductor.config`` name."""
    obj = config
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False, None
        obj = getattr(obj, part)
    return True, obj


def available_modes(device_type: str) -> tuple[str, ...]:
    """torch.compile modes for ``device_type`` that the installed PyTorch knows."""
    from torch._inductor import list_mode_options

    known = set(list_mode_options())
    wanted = GPU_MODES if device_type == "cuda" else CPU_MODES
    return tuple(m for m in wanted if m in known)


def inductor_specs(device_type: str) -> list[InductorKnobSpec]:
    """The Inductor knobs that exist (as booleans) in the installed config, for ``device_type``."""
    import torch._inductor.config as config

    out = []
    for spec in INDUCTOR_KNOBS:
        if device_type not in spec.devices:
            continue
        exists, value = _config_value(config, spec.config)
        if exists and isinstance(value, bool):
            out.append(spec)
    return out


def knob_database(device_type: str) -> KnobDatabase:
    """The knob database for ``device_type`` (``"cpu"`` or ``"cuda"``) on the installed PyTorch."""
    import torch
    import torch._inductor.config as config

    if device_type not in ("cpu", "cuda"):
        msg = f"torch backend: device type must be 'cpu' or 'cuda' (got {device_type!r})"
        raise ValueError(msg)
    knobs: list[Knob] = []
    modes = available_modes(device_type)
    knobs.append(
        Knob(
            name=MODE,
            values=modes,
            default="default",
            help=MODE_HELP + "; ".join(MODE_MEANINGS[m] for m in modes) + ". Autotuning lengthens builds.",
            allowed_text=f"{MODE}=[{'|'.join(modes)}]",
        )
    )
    precisions = GPU_PRECISIONS if device_type == "cuda" else CPU_PRECISIONS
    knobs.append(
        Knob(
            name=PRECISION,
            values=precisions,
            default="fp32",
            help=PRECISION_HELP[device_type],
            allowed_text=f"{PRECISION}=[{'|'.join(precisions)}]",
        )
    )
    for spec in inductor_specs(device_type):
        _, current = _config_value(config, spec.config)
        default = bool_value(bool(current))
        values = (default, bool_value(not current))
        knobs.append(
            Knob(
                name=spec.name,
                values=values,
                default=default,
                help=spec.help,
                allowed_text=f"{spec.name}=[{'|'.join(values)}]",
            )
        )
    version = f"torch-{torch.__version__}/inductor/{device_type}"
    return KnobDatabase(version, knobs)


def inductor_options(route_values: dict[str, str], mode: str) -> dict[str, bool]:
    """Inductor config patch for a route: the mode's preset, then the route's explicit knobs.

    Args:
        route_values: the ``-inductor:*`` knobs the route names (``name -> on|off``), already
            validated against the database.
        mode: the ``-torch:mode`` value.
    """
    from torch._inductor import list_mode_options

    options: dict[str, Any] = dict(list_mode_options(mode)) if mode != "default" else {}
    for name, value in route_values.items():
        if name.startswith(INDUCTOR_PREFIX):
            options[name[len(INDUCTOR_PREFIX) :]] = ON_OFF[value]
    return options


def read_back(device_type: str) -> dict[str, bool]:
    """Current values of every Inductor knob for ``device_type`` (call inside the config patch)."""
    import torch._inductor.config as config

    return {spec.config: bool(_config_value(config, spec.config)[1]) for spec in inductor_specs(device_type)}
