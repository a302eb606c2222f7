"""Per-kernel profile of a ``torch.compile``d candidate with the PyTorch profiler.

:func:`profile` runs the candidate's compiled module ``runs`` times under
``torch.profiler.profile`` *after* the latency was measured (the profiler is off while the
samples are taken, and it is stopped before this function returns). Each run is wrapped in a
``record_function("gptuner.run.<i>")`` so times are kept per run.

Layers:

* on CUDA, every device kernel (``triton_poi_fused_...``, cuBLAS/cuDNN kernels) by name, with its
  device time;
* on the CPU, every op called directly by the compiled graph (extern kernels such as
  ``aten::convolution``/``aten::addmm``, or ``mkldnn::_convolution_pointwise`` after freezing),
  one layer per call position (named ``op#k``, kind = the op); the generated C++ kernels
  run inside the graph's own frame unless Inductor was compiled with
  ``cpp.enable_kernel_profile``, so their time is the graph's self time: one layer named
  ``inductor generated kernels`` in every route (so two routes align on it), the kernels it
  contains in its ``kernels``.

:func:`kernel_sources` reads Inductor's generated code (the candidate's artifact) for the
``# Topologically Sorted Source Nodes: [...]`` comments, mapping kernel calls to the FX nodes of
Dynamo's graph they compute; :mod:`gptuner_core.profiles.torch_modules` resolves those to the
modules of the user's model (``features.0``), the layers' ``origins``, and the profile's
``origin_ops`` give each module's class (``Conv2d``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ProfileError
from gptuner_core.profiles.records import LayerProfile
from gptuner_core.profiles.records import LayerTime


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.profiles.torch_modules import ModuleTable

SOURCE = "torch.profiler (after measurement)"
_RUN = "gptuner.run."
_GRAPH = "## Call CompiledFxGraph"
_SOURCES = re.compile(r"#\s*Topologically Sorted Source Nodes:\s*\[([^\]]*)\](?:,\s*Original ATen:\s*\[([^\]]*)\])?")
_CALL = re.compile(
    r"^\s*(?:[\w, ]+=\s*)?(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?|[A-Za-z_]\w*(?:\.run)?)\("
)
_KERNEL_DEF = re.compile(r"^(\w+)\s*=\s*async_compile\.(cpp_pybinding|cpp|triton)\(", re.M)
_PRECISION = {"float32": "FP32", "float16": "FP16", "bfloat16": "BF16", "float64": "FP64"}
#: the one CPU layer holding the generated C++ kernels (the compiled graph's self time)
GENERATED = "inductor generated kernels"


def kernel_sources(generated: str | Path) -> dict[str, list[tuple[str, ...]]]:
    """Callee (``aten::convolution``, ``cpp_fused_relu_0``) -> source-node tuples, in call order.

    Reads every ``*.py`` file of Inductor's generated code under ``generated``.
    """
    out: dict[str, list[tuple[str, ...]]] = {}
    root = Path(generated)
    files = sorted(root.glob("*.py")) if root.is_dir() else ([root] if root.is_file() else [])
    for path in files:
        text = path.read_text(errors="replace")
        kernels = {m.group(1) for m in _KERNEL_DEF.finditer(text)}
        pending: tuple[str, ...] = ()
        for line in text.splitlines():
            m = _SOURCES.search(line)
            if m:
                pending = tuple(s.strip() for s in m.group(1).split(",") if s.strip())
                continue
            c = _CALL.match(line)
            if not c:
                continue
            callee = c.group(1).removesuffix(".run")
            if callee.startswith("extern_kernels."):
                key = "aten::" + callee.split(".", 1)[1]
            elif callee.startswith("torch.ops."):  # torch.ops.mkldnn._convolution_pointwise.default
                parts = callee.split(".")
                key = f"{parts[2]}::{parts[3]}"
            elif callee in kernels:
                key = callee
            else:
                continue
            out.setdefault(key, []).append(pending)
            pending = ()
    return out


def kernel_names(generated: str | Path) -> list[str]:
    """Names of the kernels Inductor generated (C++ or Triton)."""
    root = Path(generated)
    files = sorted(root.glob("*.py")) if root.is_dir() else []
    return [m.group(1) for p in files for m in _KERNEL_DEF.finditer(p.read_text(errors="replace"))]


def _device_time(e: Any) -> float:
    for attr in ("device_time_total", "cuda_time_total"):
        v = getattr(e, attr, None)
        if v:
            return float(v)
    return 0.0


def _on_cpu(event: Any) -> bool:
    kind = getattr(event, "device_type", None)
    return kind is None or str(kind).rsplit(".", 1)[-1].upper() == "CPU"


def parse_events(
    events: list[Any],
    *,
    device: str,
    precision: str = "",
    sources: dict[str, list[tuple[str, ...]]] | None = None,
    kernels: list[str] | None = None,
    modules: ModuleTable | None = None,
    notes: tuple[str, ...] = (),
) -> LayerProfile:
    """A :class:`LayerProfile` from ``torch.profiler`` function events (``prof.events()``).

    ``sources``/``kernels`` come from the generated code; ``modules`` (Dynamo's graph) maps the
    listed FX nodes to module paths; without it the origins are the FX node names as listed.
    """
    sources = sources or {}
    # on CUDA each record_function range appears twice (the CPU range and its device-side copy,
    # which has no children): count the CPU ranges only, or every other run reads as 0 ms
    run_events = sorted(
        (e for e in events if str(e.name).startswith(_RUN) and _on_cpu(e)),
        key=lambda e: int(e.name[len(_RUN):]),
    )
    if not run_events:
        msg = "torch profile: no 'gptuner.run.<i>' ranges in the profiler events (expected one per run)"
        raise ProfileError(msg)
    n = len(run_events)
    per_run: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    origins: dict[str, tuple[str, ...]] = {}

    details: dict[str, str] = {}

    generated: dict[str, tuple[str, ...]] = {}

    def add(name: str, kind: str, run: int, ms: float, origin: tuple[str, ...] = (), detail: str = device) -> None:
        if name not in per_run:
            per_run[name] = [0.0] * n
            kinds[name] = kind
            origins[name] = origin
            details[name] = detail
        per_run[name][run] += ms

    def descendants(e: Any) -> list[Any]:  # depth first, in call order
        out, stack = [], list(reversed(e.cpu_children))
        while stack:
            x = stack.pop()
            out.append(x)
            stack.extend(reversed(x.cpu_children))
        return out

    cuda = device.startswith("cuda")
    for i, run in enumerate(run_events):
        seen: dict[str, int] = {}
        for e in descendants(run):
            if cuda:
                for k in getattr(e, "kernels", ()) or ():
                    add(str(k.name), "cuda kernel", i, float(k.duration) / 1000.0)
                continue
            parent = e.cpu_parent
            if str(e.name).startswith(_GRAPH):
                extern = sum(float(c.cpu_time_total) for c in e.cpu_children)
                add(GENERATED, "inductor generated", i, max(0.0, float(e.cpu_time_total) - extern) / 1000.0,
                    detail=f"{device}; the compiled graph's self time")
                generated[GENERATED] = tuple(kernels or ())
            elif parent is not None and str(parent.name).startswith(_GRAPH):
                name = str(e.name)
                index = seen.get(name, 0)
                seen[name] = index + 1
                srcs = sources.get(name, [])
                listed = srcs[index] if index < len(srcs) else ()
                # nodes the table does not know (another trace) keep the names Inductor listed
                origin = (modules.resolve(name, listed) if modules is not None else ()) or listed
                inductor = "cpp_fused" in name or "triton_" in name
                add(f"{name}#{index}", "inductor kernel" if inductor else name, i,
                    float(e.cpu_time_total) / 1000.0, origin,
                    detail=f"{device}; {'generated' if inductor else 'extern'} kernel; FX nodes: "
                    + (", ".join(listed) or "-"))
    if not per_run and cuda:
        for e in events:
            if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type):
                add(str(e.name), "cuda kernel", 0, _device_time(e) / 1000.0)
    layers = tuple(
        LayerTime(name=name, kind=kinds[name], precision=precision, time_ms=sum(t) / n,
                  run_ms=tuple(t), calls=1, origins=origins[name], detail=details[name],
                  kernels=generated.get(name, ()))
        for name, t in per_run.items()
    )
    wall = sum(float(r.cpu_time_total) for r in run_events) / n / 1000.0
    if not cuda:
        notes = (*notes, "CPU: generated C++ kernels are timed together as the compiled graph's self time "
                 "(Inductor's cpp.enable_kernel_profile was off at build time)")
    return LayerProfile(backend="torch", source=SOURCE, runs=n, layers=layers, wall_ms=wall,
                        origin_ops=modules.ops if modules is not None else {}, notes=notes)


def profile(
    runner: Any,
    feeds: dict[str, np.ndarray],
    *,
    generated: str | Path | None = None,
    runs: int = 20,
    warmup: int = 3,
) -> LayerProfile:
    """Profile a :class:`~gptuner_core.backends.torch_inductor.runner.TorchRunner` after measuring.

    Args:
        runner: the candidate's loaded runner (its compiled module is reused, not recompiled).
        feeds: the measured batch; generated: Inductor's generated code (the build artifact).
        runs: profiled calls (one ``record_function`` range each); warmup: calls before.
    """
    return record(runner, feeds, generated=generated, runs=runs, warmup=warmup)()


def record(
    runner: Any,
    feeds: dict[str, np.ndarray],
    *,
    generated: str | Path | None = None,
    runs: int = 20,
    warmup: int = 3,
) -> Callable[[], LayerProfile]:
    """The device part of :func:`profile` (the profiled calls, and Dynamo's graph when the build
    did not keep it); the returned function reads the profiler's events and makes the
    :class:`LayerProfile` without the device (a candidate's child calls it after giving the
    device back)."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import record_function

    compiled = getattr(runner, "compiled", None)
    if compiled is None:
        msg = f"torch profile: expected a torch backend runner (got {type(runner).__name__})"
        raise ProfileError(msg)
    runner.prepare(feeds)
    runner.time_calls(max(0, warmup))
    device = str(compiled.device)
    activities = [ProfilerActivity.CPU]
    if compiled.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        for i in range(max(1, runs)):
            with record_function(f"{_RUN}{i}"):
                runner.time_calls(1)
    modules, notes = _module_table(compiled, feeds)
    dtype = str(getattr(compiled, "compute_dtype", "")).removeprefix("torch.")

    def make() -> LayerProfile:
        return parse_events(
            list(prof.events()), device=device, precision=_PRECISION.get(dtype, dtype.upper()),
            sources=kernel_sources(generated) if generated else {},
            kernels=kernel_names(generated) if generated else [],
            modules=modules, notes=notes,
        )

    return make


def _module_table(compiled: Any, feeds: dict[str, np.ndarray]) -> tuple[ModuleTable | None, tuple[str, ...]]:
    """Dynamo's graph of the candidate's own module: the one its compile kept
    (``CompiledModel.graph_nodes``, the graph Inductor was given), else traced again (after
    profiling: no timed call sees it)."""
    import numpy as np
    import torch

    from gptuner_core.profiles.torch_modules import ModuleTable
    from gptuner_core.profiles.torch_modules import trace_table

    kept = getattr(compiled, "graph_nodes", None)
    if kept:
        return ModuleTable(list(kept)), ()
    module = getattr(compiled.fn, "_orig_mod", None)
    if module is None:
        return None, ("kernels are not mapped to modules: the compiled module's source is not at hand",)
    try:
        inputs = []
        for name in compiled.input_names:
            t = torch.from_numpy(np.ascontiguousarray(feeds[name]))
            inputs.append((t.to(compiled.compute_dtype) if t.is_floating_point() else t).to(compiled.device))
        return trace_table(module, tuple(inputs)), ()
    except Exception as exc:  # noqa: BLE001 - origins fall back to the FX node names
        msg = f"{type(exc).__name__}: {str(exc)[:200]}"
        return None, (f"kernels are not mapped to modules: tracing the model failed ({msg})",)
