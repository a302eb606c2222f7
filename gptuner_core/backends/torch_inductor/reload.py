"""The compiled module of a built artifact, in the process that built it or in another one.

The engine measures a candidate in the process that built it (one candidate at a time) or in a
second process (building ahead; re-measurements). In the second case :func:`compiled_for`
compiles the route again with the candidate's own Inductor/Triton caches, so Dynamo traces the
model once more but Inductor generates and compiles nothing: the FX-graph and AOTAutograd caches
hit (where PyTorch can cache the graph: not with ``freezing`` on the CPU, whose mkldnn weights it
cannot pickle; there the compiled C++ kernels are still reused). It runs with one compile thread
(nothing is left to compile, and a pool of compile workers would only start up beside the
measurement) unless the study set ``compile_threads``, and writes the seconds and cache counters
of that load to the candidate's log (``CompiledModel.load_stats``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from gptuner_core.backends._base import BuildResult
from gptuner_core.backends.torch_inductor.build import _COMPILED
from gptuner_core.backends.torch_inductor.build import CACHE
from gptuner_core.backends.torch_inductor.build import CompiledModel
from gptuner_core.backends.torch_inductor.build import _use_cache_dir
from gptuner_core.backends.torch_inductor.build import codes_identity
from gptuner_core.backends.torch_inductor.build import compile_route
from gptuner_core.backends.torch_inductor.build import resolve_device
from gptuner_core.backends.torch_inductor.build import route_settings
from gptuner_core.backends.torch_inductor.device_use import counters_now
from gptuner_core.backends.torch_inductor.model import at_batch
from gptuner_core.backends.torch_inductor.precision import apply_precision_flags
from gptuner_core.errors import BackendError


def compiled_for(
    build_result: BuildResult,
    db_for: Any,
    load_model: Any,
    compile_threads: int,
    *,
    run: bool = True,
) -> CompiledModel:
    """The compiled module of ``build_result``: from this process's cache, else recompiled.

    ``db_for(device_type)`` gives the knob database and ``load_model(text)`` the model, so a
    fresh process (re-measurement) can recompile the route with the candidate's cache folder.
    ``run`` False compiles without running the model (a round's process loading ahead of its
    turn launches nothing on the measuring device; its first run is the runner's first call).
    The module's ``identity`` is that of the code compiled here (:func:`codes_identity`).
    """
    import torch

    from gptuner_core.routes import Route

    key = str(Path(build_result.artifact).resolve())
    if key in _COMPILED:
        return _COMPILED[key]
    info = build_result.info
    missing = [k for k in ("model", "route", "device") if k not in info]
    if missing:
        msg = (
            f"torch backend: artifact '{build_result.artifact}' was not built in this process and "
            f"its build info lacks {missing} to recompile it (expected the info of build())"
        )
        raise BackendError(msg)
    device = resolve_device(info["device"])
    dev_type = torch.device(device).type
    db = db_for(dev_type)
    route = Route.parse(info["route"])
    mode, precision, explicit = route_settings(db, route)
    cache_dir = Path(info.get("inductor_cache") or Path(build_result.artifact).parent / CACHE)
    _use_cache_dir(cache_dir)
    apply_precision_flags(precision, dev_type)
    t0, before = time.perf_counter(), counters_now()
    loaded = at_batch(load_model(info["model"]), info.get("batch"))  # the build's batch
    t_model = time.perf_counter()
    if torch.device(device).type == "cuda":  # the context alone (an allocation, no kernel)
        torch.empty(1, device=device)
    t_context = time.perf_counter()
    codes: list[str] = []
    compiled, _, _ = compile_route(
        loaded,
        explicit=explicit,
        mode=mode,
        precision=precision,
        device=device,
        compile_threads=compile_threads,
        threads=int(info.get("threads", 0)),
        capture=codes,
        run=run,
    )
    workdir = Path(build_result.artifact).resolve().parent
    compiled.identity = codes_identity(codes, {str(cache_dir.resolve()): "<cache>", str(workdir): "<workdir>"})
    after = counters_now()
    done = time.perf_counter()
    # where a load's time goes: the model's factory, the device's context, the weights copied and
    # the route compiled from the cache (benchmarks/gpu_study.py reads them from the log)
    compiled.load_stats = {"seconds": round(done - t0, 3), "model_s": round(t_model - t0, 3),
                           "context_s": round(t_context - t_model, 3),
                           "compile_s": round(done - t_context, 3),
                           **{k: after[k] - before[k] for k in after}}
    print(f"torch backend: loaded {build_result.artifact} from its Inductor cache in "
          f"{compiled.load_stats['seconds']} s ({json.dumps(compiled.load_stats)})", file=sys.stderr, flush=True)
    _COMPILED[key] = compiled
    return compiled
