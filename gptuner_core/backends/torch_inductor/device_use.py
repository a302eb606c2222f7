"""What a torch build runs on the measuring device, and the compile-only build that runs nothing.

Building ahead overlaps builds with the measurement of another candidate only when the build
runs no work on the measuring device (``Backend.route_uses_device``). A torch build on a GPU
normally runs the model once, and Triton then benchmarks the configs of each pointwise and
reduction kernel on the device, even in the default mode. So :func:`build` compiles *without
running* when the route has no option that benchmarks or computes on the device while compiling
(:data:`DEVICE_OPTIONS`): each compiled graph returns empty outputs until its :class:`Switch` is
turned on (:func:`until_live`). The build still creates a CUDA context and copies the weights and
the example inputs to the device (copies, no kernel). Everything compiled lands in the
candidate's Inductor/Triton caches; the measuring process loads it from there (FX-graph and
AOTAutograd cache hits, :func:`counters_now`) and runs the first call, where Triton picks its
configs, under the measuring side of the gate.

Not covered: a model with graph breaks runs its eager code between graphs on those empty outputs
during the compile-only call (on the device); Inductor's shape-padding pass may time a
compute-bound matmul with unaligned shapes while compiling (``shape_padding``, on by default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True, kw_only=True)
class Switch:
    live: bool


#: Inductor options that run work on the GPU while compiling (kernel benchmarks, freezing's
#: constant folding on the real weights): a route with any of them on builds on the device
#: (``benchmark_epilogue_fusion``, on by default, only acts with max_autotune templates).
DEVICE_OPTIONS = (
    "max_autotune", "max_autotune_gemm", "max_autotune_pointwise", "coordinate_descent_tuning",
    "freezing", "benchmark_fusion", "benchmark_combo_kernel",
)
#: of :data:`DEVICE_OPTIONS`, those that time kernels on the device while compiling (what they
#: choose depends on what else runs there); freezing only computes
TIMING_OPTIONS = tuple(name for name in DEVICE_OPTIONS if name != "freezing")
#: cache counters a load reports (``torch._dynamo.utils.counters``)
CACHE_COUNTERS = {
    "inductor": ("fxgraph_cache_hit", "fxgraph_cache_miss", "fxgraph_cache_bypass"),
    "aot_autograd": ("autograd_cache_hit", "autograd_cache_miss", "autograd_cache_bypass"),
}


def uses_device(device_type: str, options: dict[str, Any]) -> bool:
    """Whether a build with the Inductor config patch ``options`` runs work on the measuring
    device. On the CPU always (the C++ compile runs on the cores that are measured). On a GPU
    only when an option of :data:`DEVICE_OPTIONS` is in force (the patch over the installed
    defaults): a default-mode build compiles on the CPU and runs nothing on the device, because
    :func:`build` compiles without running (the first run, where Triton picks its pointwise
    and reduction configs on the device, happens when the candidate is measured)."""
    if device_type != "cuda":
        return True
    return bool(options_on(options, DEVICE_OPTIONS))


def options_on(options: dict[str, Any], names: tuple[str, ...]) -> set[str]:
    """Which of the Inductor options ``names`` are in force with the config patch ``options``
    (the patch over the installed defaults)."""
    import torch._inductor.config as config

    return {name for name in names if bool(options.get(name, getattr(config, name, False)))}


def counters_now() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {name: int(counters[group][name]) for group, names in CACHE_COUNTERS.items() for name in names}


def until_live(compiled: Any, gm: Any, switch: Switch) -> Any:
    """``compiled`` (a graph compiled by Inductor), which until ``switch.live`` returns empty
    outputs of the graph's shapes, strides and dtypes instead of running: the compile-only build
    launches no kernel (the caches it fills are what the measuring process loads)."""
    import torch
    from torch.fx.node import map_aggregate

    output = next(n for n in gm.graph.nodes if n.op == "output")

    def empty(node: Any) -> Any:
        value = node.meta.get("example_value", node.meta.get("val")) if isinstance(node, torch.fx.Node) else node
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(tuple(value.size()), tuple(value.stride()),
                                       dtype=value.dtype, device=value.device)
        return value

    def run(*args: Any) -> Any:
        if switch.live:
            return compiled(*args)
        return map_aggregate(output.args[0], empty)

    run._boxed_call = getattr(compiled, "_boxed_call", False)  # type: ignore[attr-defined]
    return run
