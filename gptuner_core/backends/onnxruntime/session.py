"""Session options from knob values, normalization rules, and read-back of what ORT applied.

Normalization (reported in the effective route, never an error):

* ``-ort:inter_op_num_threads`` != 0 with ``-ort:execution_mode=sequential`` -> 0 (ORT ignores the
  inter-op pool in sequential mode);
* ``session.x64quantprecision`` / ``session.disable_quant_qdq`` != 0 without ``-quant:mode=qdq``
  -> 0 (they only act on QuantizeLinear/DequantizeLinear pairs).

Values outside a knob's list never reach this module: routes are validated against the knob
database first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends.onnxruntime import knobs as K


if TYPE_CHECKING:
    import onnxruntime as ort

OPT_LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "layout": "ORT_ENABLE_LAYOUT",
    "all": "ORT_ENABLE_ALL",
}
EXEC_MODES = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
_BOOL_ATTRS = {
    K.MEM_PATTERN: "enable_mem_pattern",
    K.CPU_ARENA: "enable_cpu_mem_arena",
    K.MEM_REUSE: "enable_mem_reuse",
    K.DETERMINISTIC: "use_deterministic_compute",
}
_QDQ_ONLY = (
    K.CONFIG_PREFIX + "session.x64quantprecision",
    K.CONFIG_PREFIX + "session.disable_quant_qdq",
)
#: config knobs whose "off" value means: do not add the entry at all.
_UNSET_VALUES = {K.CONFIG_PREFIX + "optimization.disable_specified_optimizers": "none"}


def normalize(
    values: dict[str, str], defaults: dict[str, str]
) -> tuple[dict[str, str], list[str]]:
    out = dict(values)
    notes: list[str] = []

    def reset(name: str, why: str) -> None:
        if name in out and out[name] != defaults[name]:
            notes.append(f"{name}={out[name]} -> {defaults[name]} ({why})")
            out[name] = defaults[name]

    if out.get(K.EXEC_MODE, "sequential") == "sequential":
        reset(K.INTER, f"inter-op threads are only used with {K.EXEC_MODE}=parallel")
    if out.get(K.QUANT_MODE, "off") != "qdq":
        for name in _QDQ_ONLY:
            reset(name, f"only acts on QDQ models ({K.QUANT_MODE}=qdq)")
    return out, notes


def config_entries(values: dict[str, str]) -> dict[str, str]:
    """Session config entries (``key -> value``) the values ask for, defaults left unset."""
    entries = {}
    for name, value in values.items():
        if not name.startswith(K.CONFIG_PREFIX):
            continue
        if _UNSET_VALUES.get(name) == value:
            continue
        entries[name[len(K.CONFIG_PREFIX) :]] = value
    return entries


def session_options(
    values: dict[str, str], optimized_path: str | None = None
) -> ort.SessionOptions:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = getattr(
        ort.GraphOptimizationLevel, OPT_LEVELS[values.get(K.OPT_LEVEL, "all")]
    )
    so.execution_mode = getattr(
        ort.ExecutionMode, EXEC_MODES[values.get(K.EXEC_MODE, "sequential")]
    )
    so.intra_op_num_threads = int(values.get(K.INTRA, "0"))
    so.inter_op_num_threads = int(values.get(K.INTER, "0"))
    for name, attr in _BOOL_ATTRS.items():
        if name in values:
            setattr(so, attr, values[name] == "on")
    for key, value in config_entries(values).items():
        so.add_session_config_entry(key, value)
    if optimized_path:
        so.optimized_model_filepath = optimized_path
    return so


def read_back(session: ort.InferenceSession, requested: dict[str, str]) -> dict[str, str]:
    """Knob values as the live session reports them (for the knobs in ``requested``)."""
    so = session.get_session_options()
    levels = {v: k for k, v in OPT_LEVELS.items()}
    modes = {v: k for k, v in EXEC_MODES.items()}
    out: dict[str, str] = {}
    for name, value in requested.items():
        got: Any = value
        if name == K.OPT_LEVEL:
            got = levels.get(so.graph_optimization_level.name, so.graph_optimization_level.name)
        elif name == K.EXEC_MODE:
            got = modes.get(so.execution_mode.name, so.execution_mode.name)
        elif name == K.INTRA:
            got = str(so.intra_op_num_threads)
        elif name == K.INTER:
            got = str(so.inter_op_num_threads)
        elif name in _BOOL_ATTRS:
            got = "on" if getattr(so, _BOOL_ATTRS[name]) else "off"
        elif name.startswith(K.CONFIG_PREFIX):
            key = name[len(K.CONFIG_PREFIX) :]
            try:
                got = so.get_session_config_entry(key)
            except RuntimeError:  # entry not set: ORT's default applies
                got = _UNSET_VALUES.get(name, "<unset>")
        out[name] = got
    return out


def applied_options(session: ort.InferenceSession) -> dict[str, Any]:
    """A JSON-able snapshot of the live session's options and providers."""
    so = session.get_session_options()
    return {
        "graph_optimization_level": so.graph_optimization_level.name,
        "execution_mode": so.execution_mode.name,
        "intra_op_num_threads": so.intra_op_num_threads,
        "inter_op_num_threads": so.inter_op_num_threads,
        "enable_mem_pattern": so.enable_mem_pattern,
        "enable_cpu_mem_arena": so.enable_cpu_mem_arena,
        "enable_mem_reuse": so.enable_mem_reuse,
        "use_deterministic_compute": so.use_deterministic_compute,
        "providers": session.get_providers(),
    }
