"""Compile a route with ``torch.compile`` (Inductor) in the candidate's process.

What :func:`build` does, in order:

1. points Inductor's and Triton's caches at ``<workdir>/inductor_cache`` (``TORCHINDUCTOR_CACHE_DIR``,
   ``TRITON_CACHE_DIR``) and clears the in-process caches, so each candidate compiles from scratch
   and its generated code lands in its own folder;
2. sets the precision: TF32 flags (``torch.backends.cuda.matmul.allow_tf32``,
   ``torch.backends.cudnn.allow_tf32``, ``set_float32_matmul_precision``) and, for bf16/fp16,
   ``module.to(dtype)`` with floating inputs cast to the same dtype. The default ``fp32`` puts
   the flags back to PyTorch's own defaults (read before gptuner first touches them: cuDNN
   convolutions in TF32, matmuls strict), so the 1.0x baseline is plain ``torch.compile``;
   ``fp32_strict`` turns TF32 off for convolutions too, ``tf32`` on for matmuls as well;
3. compiles with ``torch.compile(module, backend=..., dynamic=False)``. The route's Inductor
   options are applied with ``torch._inductor.config.patch`` around every call that may compile
   (this first run, and the runner's ``infer``/``prepare``), not only around ``compile_fx``:
   Dynamo itself reads some of them while tracing (``freezing`` turns parameters into guarded
   constants), which is why ``torch.compile(options=...)`` alone would not freeze. The backend
   reads the configuration back while it is in force, keeps each graph's call nodes
   (``graph_nodes``) and captures its generated wrapper code (``GraphLowering.save_output_code``);
4. runs once (the compile happens there) and records the compile time.

The artifact is ``<workdir>/generated/``: one ``graph_NNN.py`` per compiled graph holding the
wrapper with every kernel's source inline (C++ on the CPU, Triton on the GPU). The engine hashes
it for duplicate detection, so it is normalized: the per-candidate cache path is replaced by
``<cache>`` (Triton's ``# kernel path:`` comments) and the per-process ``# AOT ID`` counter line is
dropped. Nothing else in the code depends on the time or the folder. Settings that change
behaviour without changing code (CUDA graphs, TF32 for library calls) go to ``info["runtime_config"]``,
mixed into the artifact key. The Inductor cache stays beside it in ``inductor_cache/``.

``torch.compile`` output cannot be reloaded directly in another process, so :func:`build` keeps
the compiled module in a module-level cache keyed by the artifact path, which
:func:`.reload.compiled_for` returns to ``load()`` in the same process. In another process
(building ahead measures there, and so does every re-measurement) it compiles the route again with
the candidate's own cache folder: FX-graph and AOTAutograd cache hits. A route that runs nothing
on a GPU while compiling is built without running (:mod:`.device_use`).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends._base import BuildResult
from gptuner_core.backends.torch_inductor import knobs as K
from gptuner_core.backends.torch_inductor.device_use import Switch
from gptuner_core.backends.torch_inductor.device_use import until_live
from gptuner_core.backends.torch_inductor.device_use import uses_device
from gptuner_core.backends.torch_inductor.graph_nodes import source_nodes
from gptuner_core.backends.torch_inductor.precision import apply_precision_flags
from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    from gptuner_core.backends.torch_inductor.model import LoadedModel
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.routes import Route

GENERATED = "generated"
CACHE = "inductor_cache"
BUILD_JSON = "build.json"
DTYPES = {"fp32": "float32", "fp32_strict": "float32", "tf32": "float32"}
DTYPES |= {"bf16": "bfloat16", "fp16": "float16"}


@dataclass(slots=True, kw_only=True)
class CompiledModel:
    """A compiled module and what the runner needs to feed it."""

    fn: Any
    device: Any  # torch.device
    compute_dtype: Any  # torch.dtype floating inputs are cast to
    input_names: tuple[str, ...]
    input_dtypes: tuple[Any, ...]  # the model's own input dtypes (torch.dtype)
    example_shapes: tuple[tuple[int, ...], ...]
    output_names: tuple[str, ...]
    precision: str
    cudagraphs: bool
    #: the Inductor config patch of the route; applied around every call that may compile
    options: dict[str, Any] = field(default_factory=dict)
    compiled_shapes: set[tuple[tuple[int, ...], ...]] = field(default_factory=set)
    snapshots: list[dict[str, Any]] = field(default_factory=list)
    #: ``live`` False: the compiled graphs return uninitialised outputs instead of running
    #: (a compile-only build); :func:`build` turns it on before anyone runs the module
    switch: Switch = field(default_factory=lambda: Switch(live=True))
    #: how :func:`compiled_for` got the module in another process: seconds and the Inductor /
    #: AOTAutograd cache counters of that compile (hits mean nothing was recompiled)
    load_stats: dict[str, Any] = field(default_factory=dict)
    #: what this process runs: the sha256 its artifact folder would have (:func:`codes_identity`
    #: of the generated code compiled or loaded here; ``None``: not captured)
    identity: str | None = None
    #: the call nodes of the graphs handed to Inductor (``graph_nodes``; a profile's modules)
    graph_nodes: tuple[Any, ...] = ()


def codes_identity(codes: list[str], replacements: dict[str, str]) -> str:
    """The sha256 :func:`gptuner_core.fingerprint.file_sha256` gives the ``generated`` folder
    that :func:`build` writes for these wrapper codes: a process that compiled the route again
    (from the caches) can say whether it runs the very code that was screened."""
    import hashlib

    h = hashlib.sha256()
    for i, code in enumerate(codes):
        h.update(f"graph_{i:03d}.py".encode() + b"\0" + normalize_code(code, replacements).encode())
    return h.hexdigest()


#: artifact path (resolved, as str) -> compiled module of this process.
_COMPILED: dict[str, CompiledModel] = {}


def resolve_device(option: str) -> str:
    """``auto`` -> ``cuda:0`` when CUDA is available, else ``cpu``; ``cuda`` -> ``cuda:0``."""
    import torch

    if option == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if option == "cuda":
        option = "cuda:0"
    if option.startswith("cuda"):
        if not torch.cuda.is_available():
            msg = f"torch backend: device '{option}' requested but CUDA is not available here"
            raise BackendError(msg)
        index = int(option.partition(":")[2])
        if index >= torch.cuda.device_count():
            msg = (
                f"torch backend: device '{option}' does not exist "
                f"(this machine has {torch.cuda.device_count()} CUDA device(s))"
            )
            raise BackendError(msg)
    return option


def _use_cache_dir(cache_dir: Path) -> None:
    import torch
    import torch._inductor.utils as inductor_utils

    cache_dir.mkdir(parents=True, exist_ok=True)
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)
    os.environ["TRITON_CACHE_DIR"] = str(cache_dir / "triton")
    clear = getattr(inductor_utils, "clear_caches", None) or getattr(
        inductor_utils, "clear_inductor_caches", None
    )
    if clear is not None:
        clear()
    torch._dynamo.reset()


def normalize_code(code: str, replacements: dict[str, str]) -> str:
    """Drop the per-process ``# AOT ID`` line and replace per-candidate paths by placeholders."""
    lines = [line for line in code.splitlines() if not line.startswith("# AOT ID:")]
    text = "\n".join(lines) + "\n"
    for old, new in sorted(replacements.items(), key=lambda kv: -len(kv[0])):
        if old:
            text = text.replace(old, new)
    return text


def _cast_inputs(loaded: LoadedModel, device: Any, dtype: Any) -> tuple[Any, ...]:
    return tuple(
        (t.to(dtype=dtype) if t.is_floating_point() else t).to(device=device)
        for t in loaded.example_inputs
    )


def _sync(device: Any) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def compile_route(
    loaded: LoadedModel,
    *,
    explicit: dict[str, str],
    mode: str,
    precision: str,
    device: str,
    compile_threads: int,
    threads: int = 0,
    capture: list[str] | None = None,
    run: bool = True,
) -> tuple[CompiledModel, Any, float]:
    """Compile and run once; return ``(compiled, first outputs, compile seconds)``.

    ``explicit`` holds the ``-inductor:*`` knobs the route names. ``capture`` receives the
    generated wrapper code of each graph. ``threads`` > 0 sets the CPU intra-op thread count
    before compiling (Inductor bakes it into the C++ kernels' OpenMP pragmas). ``run`` False
    compiles without running: the first call returns empty outputs (``compiled.switch``).
    """
    import torch
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.graph import GraphLowering

    from gptuner_core.backends.torch_inductor.model import flatten_outputs

    dev = torch.device(device)
    if threads > 0 and dev.type == "cpu":
        torch.set_num_threads(threads)
    dtype = getattr(torch, DTYPES[precision])
    options: dict[str, Any] = K.inductor_options(explicit, mode)
    if compile_threads > 0:
        options["compile_threads"] = compile_threads
    snapshots: list[dict[str, Any]] = []
    nodes: list[Any] = []
    switch = Switch(live=run)

    def backend(gm: Any, example_inputs: Any) -> Any:
        nodes.extend(source_nodes(gm))  # before Inductor's passes rewrite the graph
        with inductor_config.patch(options):
            snapshots.append(K.read_back(dev.type))
            compiled_graph = compile_fx(gm, example_inputs)
        return compiled_graph if run else until_live(compiled_graph, gm, switch)

    try:  # cast on the host, then copy: no conversion kernel runs on the device
        module = loaded.module if dtype == torch.float32 else loaded.module.to(dtype=dtype)
        module = module.to(device=dev)
        inputs = _cast_inputs(loaded, dev, dtype)
    except Exception as exc:
        msg = f"torch backend: cannot move the model to {device} as {precision} ({type(exc).__name__}: {exc})"
        raise BackendError(msg) from exc

    saved_hook = GraphLowering.save_output_code
    if capture is not None:
        GraphLowering.save_output_code = staticmethod(capture.append)
    try:
        compiled_fn = torch.compile(module, backend=backend, dynamic=False)
        t0 = time.perf_counter()
        # The patch must also be in force while Dynamo traces: it reads some options itself
        # (freezing: parameters become guarded constants instead of graph inputs).
        with inductor_config.patch(options), torch.no_grad():
            out = compiled_fn(*inputs)
        _sync(dev)
        compile_s = time.perf_counter() - t0
    except BackendError:
        raise
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        msg = (
            f"torch backend: torch.compile failed for mode={mode} precision={precision} "
            f"options={options} ({type(exc).__name__}: {first})"
        )
        raise BackendError(msg) from exc
    finally:
        GraphLowering.save_output_code = saved_hook
    names, _ = flatten_outputs(out)
    effective = snapshots[0] if snapshots else K.read_back(dev.type)
    compiled = CompiledModel(
        fn=compiled_fn,
        device=dev,
        compute_dtype=dtype,
        input_names=loaded.input_names,
        input_dtypes=tuple(t.dtype for t in loaded.example_inputs),
        example_shapes=tuple(tuple(t.shape) for t in loaded.example_inputs),
        output_names=names,
        precision=precision,
        cudagraphs=bool(effective.get("triton.cudagraphs", False)),
        options=options,
        snapshots=snapshots,
        switch=switch,
        graph_nodes=tuple(nodes),
    )
    if run:
        compiled.compiled_shapes.add(compiled.example_shapes)
    return compiled, out, compile_s


def effective_route(db: KnobDatabase, mode: str, precision: str, config: dict[str, bool]) -> str:
    """Every knob of ``db`` with the value really in force, in database order."""
    parts = []
    for knob in db:
        if knob.name == K.MODE:
            value = mode
        elif knob.name == K.PRECISION:
            value = precision
        else:
            value = K.bool_value(config[knob.name[len(K.INDUCTOR_PREFIX) :]])
        parts.append(f"{knob.name}={value}")
    return " ".join(parts)


def route_settings(db: KnobDatabase, route: Route) -> tuple[str, str, dict[str, str]]:
    """``(mode, precision, explicit -inductor:* knobs)`` of a validated route."""
    route.validate(db)
    values = route.resolved(db)
    explicit = {n: v for n, v in route.as_dict().items() if n.startswith(K.INDUCTOR_PREFIX)}
    return values[K.MODE], values[K.PRECISION], explicit


def build(
    loaded: LoadedModel,
    db: KnobDatabase,
    route: Route,
    workdir: Path,
    *,
    model_text: str,
    device: str,
    compile_threads: int,
    threads: int = 0,
    compile_only: bool | None = None,
) -> BuildResult:
    """Compile ``route`` into ``workdir`` and cache the compiled module for :func:`compiled_for`.

    ``compile_only``: compile without running the model (``None``: when the route runs nothing
    on the device while compiling, :func:`device_use.uses_device`)."""
    import torch
    from torch._dynamo.utils import counters

    mode, precision, explicit = route_settings(db, route)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    cache_dir = workdir / CACHE
    generated = workdir / GENERATED
    for stale in (cache_dir, generated):
        if stale.exists():
            shutil.rmtree(stale)
    _use_cache_dir(cache_dir)
    dev_type = torch.device(device).type
    flags = apply_precision_flags(precision, dev_type)
    skips_before = int(counters["inductor"]["cudagraph_skips"])
    codes: list[str] = []
    options = K.inductor_options(explicit, mode)
    on_device = uses_device(dev_type, options)
    dry = not on_device if compile_only is None else compile_only
    compiled, _, compile_s = compile_route(
        loaded,
        explicit=explicit,
        mode=mode,
        precision=precision,
        device=device,
        compile_threads=compile_threads,
        threads=threads,
        capture=codes,
        run=not dry,
    )
    compiled.switch.live = True  # this process may run it now (load() after build())
    if not codes:
        msg = (
            f"torch backend: torch.compile produced no Inductor graph for '{model_text}' "
            "(the forward has no tensor operations Dynamo could capture)"
        )
        raise BackendError(msg)
    generated.mkdir()
    replacements = {str(cache_dir): "<cache>", str(workdir): "<workdir>"}
    for i, code in enumerate(codes):
        (generated / f"graph_{i:03d}.py").write_text(normalize_code(code, replacements))
    compiled.identity = codes_identity(codes, replacements)
    config = compiled.snapshots[0]
    runtime_config: dict[str, Any] = {}
    if dev_type == "cuda":
        runtime_config = {
            "cudagraphs": compiled.cudagraphs,
            "matmul_tf32": flags["cuda.matmul.allow_tf32"],
            "cudnn_tf32": flags["cudnn.allow_tf32"],
            "float32_matmul_precision": flags["float32_matmul_precision"],
        }
    info: dict[str, Any] = {
        "model": model_text,
        "route": str(route),
        "device": device,
        "torch_version": torch.__version__,
        "compile_time_s": round(compile_s, 4),
        "build_uses_device": on_device,
        "build_ran_model": not dry,
        "graphs": len(codes),
        "recompiles": max(0, len(compiled.snapshots) - 1),
        "mode": mode,
        "mode_options": K.inductor_options({}, mode),
        "precision": precision,
        "dtype": DTYPES[precision],
        "precision_flags": flags,
        "inductor_options": K.inductor_options(explicit, mode),
        "effective_config": config,
        "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"]) - skips_before,
        "input_names": list(compiled.input_names),
        "input_shapes": [list(s) for s in compiled.example_shapes],
        "batch": loaded.batch,  # a measuring process compiles again for it (reload)
        "output_names": list(compiled.output_names),
        "inductor_cache": str(cache_dir),
        "compile_threads": compile_threads, "threads": threads,
        "cpu_threads_in_force": torch.get_num_threads(),
    }
    if runtime_config:
        info["runtime_config"] = runtime_config
    (workdir / BUILD_JSON).write_text(json.dumps(info, indent=2, sort_keys=True))
    _COMPILED[str(generated)] = compiled
    return BuildResult(
        artifact=generated,
        effective_route=effective_route(db, mode, precision, config),
        info=info,
    )
