"""The ONNX Runtime knob database of one model, in TensorRT's ``all_build_routes`` schema.

Namespaces:

* ``-quant:*`` and ``-fp16:*``: precision transforms applied to the model before the session is
  created (``onnxruntime.quantization`` / ``onnxruntime.transformers.float16``), plus one
  ``-quant:node:<ONNX node name>=[on|off]`` knob per Conv/MatMul/Gemm node (the Q/DQ insertion
  points; ``off`` keeps that node in fp32).
* ``-ort:*``: ``SessionOptions`` attributes; ``-ort:config:<key>``: session config entries that
  ONNX Runtime 1.32 really reads on the CPU (keys that only matter for op types the model lacks are
  left out, e.g. the GELU approximation for a model without Gelu/Erf).

Every value is listed explicitly, so ``Route.validate(db)`` rejects anything else: ONNX Runtime
itself silently accepts unknown keys, ``"abc"`` values and negative thread counts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.knobs import Knob
from gptuner_core.knobs import KnobDatabase


if TYPE_CHECKING:
    import onnx

QUANT_MODE = "-quant:mode"
QUANT_ACT = "-quant:activation_type"
QUANT_WEIGHT = "-quant:weight_type"
QUANT_PER_CHANNEL = "-quant:per_channel"
QUANT_REDUCE_RANGE = "-quant:reduce_range"
QUANT_CALIBRATION = "-quant:calibration"
QUANT_OP_TYPES = "-quant:op_types"
QUANT_PREPROCESS = "-quant:preprocess"
QUANT_NODE_PREFIX = "-quant:node:"
FP16 = "-fp16:convert"

OPT_LEVEL = "-ort:graph_optimization_level"
EXEC_MODE = "-ort:execution_mode"
INTRA = "-ort:intra_op_num_threads"
INTER = "-ort:inter_op_num_threads"
MEM_PATTERN = "-ort:enable_mem_pattern"
CPU_ARENA = "-ort:enable_cpu_mem_arena"
MEM_REUSE = "-ort:enable_mem_reuse"
DETERMINISTIC = "-ort:use_deterministic_compute"
CONFIG_PREFIX = "-ort:config:"


@dataclass(frozen=True, slots=True)
class KnobSpec:
    name: str
    values: tuple[str, ...]
    default: str
    help: str

    def knob(self) -> Knob:
        return Knob(
            name=self.name,
            values=self.values,
            default=self.default,
            help=self.help,
            allowed_text=f"{self.name}=[{'|'.join(self.values)}]",
        )


def thread_values(cpu_count: int | None = None) -> tuple[str, ...]:
    """``0`` (ONNX Runtime's choice: all cores) then 1, 2, 4, ... up to the core count."""
    n = max(1, cpu_count if cpu_count is not None else (os.cpu_count() or 1))
    values = ["0"]
    v = 1
    while v < n:
        values.append(str(v))
        v *= 2
    values.append(str(n))
    return tuple(dict.fromkeys(values))


PRECISION_KNOBS = (
    KnobSpec(
        QUANT_MODE,
        ("off", "qdq", "qoperator", "dynamic"),
        "off",
        "INT8 post-training quantization: off (fp32), qdq (static, QuantizeLinear/DequantizeLinear "
        "pairs fused by ORT into QLinear kernels), qoperator (static, QLinearConv/QGemm ops), "
        "dynamic (weights only, activations quantized at run time; Conv becomes ConvInteger, "
        "3-6x slower on x86).",
    ),
    KnobSpec(
        QUANT_ACT,
        ("uint8", "int8", "uint16"),
        "uint8",
        "Activation type for static quantization (uint16 has no fast kernels: dequantize + fp32). "
        "Ignored by dynamic quantization (always uint8).",
    ),
    KnobSpec(
        QUANT_WEIGHT,
        ("int8", "uint8", "int4"),
        "int8",
        "Weight type. int4 is QDQ-only, has no CPU kernels (dequantize + fp32) and loses accuracy: "
        "a deliberate bad route.",
    ),
    KnobSpec(
        QUANT_PER_CHANNEL,
        ("off", "on"),
        "off",
        "Per-output-channel weight scales. Without reduce_range it can saturate u8*s8 products on "
        "AVX2 CPUs without VNNI (silent accuracy loss).",
    ),
    KnobSpec(
        QUANT_REDUCE_RANGE,
        ("off", "on"),
        "off",
        "7-bit weights: avoids u8*s8 saturation on AVX2 without VNNI (recommended there).",
    ),
    KnobSpec(
        QUANT_CALIBRATION,
        ("minmax", "entropy", "percentile"),
        "minmax",
        "Static calibration method over the study's calibration inputs (percentile can fail on "
        "inputs with infinite values). Ignored by dynamic quantization.",
    ),
    KnobSpec(
        QUANT_OP_TYPES,
        ("compute", "gemm", "all"),
        "compute",
        "Op types to quantize: compute = Conv, MatMul, Gemm; gemm = MatMul, Gemm (keeps Conv in "
        "fp32, the sane choice for dynamic mode); all = every op type of ORT's quantization "
        "registry (documented bad route: quantizes non-compute ops too).",
    ),
    KnobSpec(
        QUANT_PREPROCESS,
        ("on", "off"),
        "on",
        "Run ONNX Runtime's quant_pre_process (constant folding, shape inference, basic "
        "optimizations) before quantizing: needed by exports whose weights are Constant nodes "
        "(paddle2onnx). off quantizes the model as exported.",
    ),
    KnobSpec(
        FP16,
        ("off", "on"),
        "off",
        "Convert the model to float16 with inputs/outputs kept float32 (keep_io_types). No gain on "
        "x86 CPUs; cannot be combined with -quant:mode.",
    ),
)

SESSION_KNOBS = (
    KnobSpec(
        OPT_LEVEL,
        ("disable", "basic", "extended", "layout", "all"),
        "all",
        "SessionOptions.graph_optimization_level (ORT_DISABLE_ALL .. ORT_ENABLE_ALL). Below "
        "extended, QDQ models are not fused into int8 kernels.",
    ),
    KnobSpec(
        EXEC_MODE,
        ("sequential", "parallel"),
        "sequential",
        "SessionOptions.execution_mode: parallel runs independent nodes on an inter-op pool.",
    ),
    KnobSpec(
        INTRA,
        thread_values(),
        "0",
        "SessionOptions.intra_op_num_threads (0 = all cores); capped at this machine's core count.",
    ),
    KnobSpec(
        INTER,
        thread_values(),
        "0",
        "SessionOptions.inter_op_num_threads; only used in parallel mode (normalized to 0 in "
        "sequential mode).",
    ),
    KnobSpec(MEM_PATTERN, ("on", "off"), "on", "SessionOptions.enable_mem_pattern."),
    KnobSpec(CPU_ARENA, ("on", "off"), "on", "SessionOptions.enable_cpu_mem_arena."),
    KnobSpec(MEM_REUSE, ("on", "off"), "on", "SessionOptions.enable_mem_reuse."),
    KnobSpec(DETERMINISTIC, ("off", "on"), "off", "SessionOptions.use_deterministic_compute."),
    KnobSpec(
        CONFIG_PREFIX + "session.intra_op.allow_spinning",
        ("1", "0"),
        "1",
        "Intra-op threads spin while waiting: lower latency, more CPU burn.",
    ),
    KnobSpec(
        CONFIG_PREFIX + "session.disable_prepacking",
        ("0", "1"),
        "0",
        "Disable weight pre-packing at session creation.",
    ),
    KnobSpec(
        CONFIG_PREFIX + "session.set_denormal_as_zero",
        ("0", "1"),
        "0",
        "Flush denormal floats to zero (may change results slightly).",
    ),
    KnobSpec(
        CONFIG_PREFIX + "session.dynamic_block_base",
        ("0", "4"),
        "0",
        "Dynamic work-block size of the intra-op pool (0 = static partitioning).",
    ),
    KnobSpec(
        CONFIG_PREFIX + "session.x64quantprecision",
        ("0", "1"),
        "0",
        "QDQ models only: compute u8*s8 in higher precision on x64 (fixes AVX2 saturation, slower). "
        "Normalized to 0 unless -quant:mode=qdq.",
    ),
    KnobSpec(
        CONFIG_PREFIX + "session.disable_quant_qdq",
        ("0", "1"),
        "0",
        "QDQ models only: do not fuse Q/DQ into int8 kernels (runs dequantize + fp32). Normalized "
        "to 0 unless -quant:mode=qdq.",
    ),
)

CONV_ONLY_KNOBS = (
    KnobSpec(
        CONFIG_PREFIX + "optimization.disable_specified_optimizers",
        ("none", "NchwcTransformer"),
        "none",
        "Disable the NCHWc layout transformer (blocked-layout Conv kernels).",
    ),
)

GELU_ONLY_KNOBS = (
    KnobSpec(
        CONFIG_PREFIX + "optimization.enable_gelu_approximation",
        ("0", "1"),
        "0",
        "Replace Gelu by its tanh approximation (changes results slightly).",
    ),
)


def tuner_version() -> str:
    try:
        from importlib.metadata import version

        return f"onnxruntime-{version('onnxruntime')}"
    except Exception:  # metadata missing: still a usable database
        return "onnxruntime-unknown"


def node_knob_name(node_name: str) -> str:
    return f"{QUANT_NODE_PREFIX}{node_name}"


def build_knob_database(model: onnx.ModelProto) -> KnobDatabase:
    """Knobs for ``model``: precision, session, model-dependent config keys, per-node switches."""
    from gptuner_core.backends.onnxruntime.model import op_types
    from gptuner_core.backends.onnxruntime.model import quantizable_nodes

    present = op_types(model)
    specs = list(PRECISION_KNOBS) + list(SESSION_KNOBS)
    if "Conv" in present:
        specs += CONV_ONLY_KNOBS
    if present & {"Gelu", "Erf", "FastGelu", "BiasGelu"}:
        specs += GELU_ONLY_KNOBS
    knobs = [s.knob() for s in specs]
    for name, op in quantizable_nodes(model):
        knobs.append(
            Knob(
                name=node_knob_name(name),
                values=("on", "off"),
                default="on",
                help=(
                    f"Quantize {op} node '{name}' when -quant:mode is not off (off keeps it fp32: "
                    "the per-layer precision choice)."
                ),
                allowed_text=f"{node_knob_name(name)}=[on|off]",
            )
        )
    return KnobDatabase(tuner_version(), knobs)
