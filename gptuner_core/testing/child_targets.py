"""Real child targets for the isolation and launcher tests (``run_isolated("...:name", job, ...)``).

Each is what a candidate's child runs: ``target(job, workdir, phase) -> dict``. They really
segfault, abort, hang, exit early, write native output or report what the child process sees
(its parent, environment, working directory, ``sys.path``, module state, OpenBLAS pool).
"""

from __future__ import annotations

import ctypes
import importlib
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


#: set by :func:`report` in its own process; a fresh child must always see the initial value
STATE = "initial"


def report(job: dict[str, Any], workdir: Path, phase: Callable[[str], None]) -> dict[str, Any]:
    """What this child sees; then it changes module state a next child must not see."""
    global STATE  # noqa: PLW0603 - the state whose leak the tests look for
    import gptuner_core.engine.process.child as preloaded
    from gptuner_core.engine.process.launcher_main import blas_threads

    phase("build")
    seen = {
        "pid": os.getpid(), "ppid": os.getppid(), "state": STATE,
        "preloaded_state": getattr(preloaded, "LEAK", "initial"),
        "env": {k: os.environ.get(k) for k in job.get("env_keys", ())},
        "cwd": os.getcwd(), "sys_path": list(sys.path), "blas_threads": blas_threads(),
        "threads": len(os.listdir("/proc/self/task")),
        "modules": sorted(m for m in job.get("modules", ()) if m in sys.modules),
        "cuda_initialized": bool("torch" in sys.modules and sys.modules["torch"].cuda.is_initialized()),
    }
    if job.get("primed"):  # the Inductor keys the torch fork server computes before forking
        from gptuner_core.backends.torch_inductor.prime import primed

        seen["primed"] = primed()
    if job.get("import"):
        seen["imported"] = getattr(importlib.import_module(job["import"]), "VALUE", None)
    STATE = f"set by {os.getpid()}"
    preloaded.LEAK = f"set by {os.getpid()}"  # type: ignore[attr-defined]
    phase("measure")
    return seen


def misbehave(job: dict[str, Any], workdir: Path, phase: Callable[[str], None]) -> dict[str, Any]:
    """``job["mode"]``: segfault, abort, exit_early, garbage_result, raise (in the build), hang_build,
    hang_measure, output (Python and native writes to stdout/stderr), ok."""
    mode = job["mode"]
    phase("build")
    if mode == "segfault":
        ctypes.string_at(0)
    if mode == "abort":
        os.kill(os.getpid(), signal.SIGABRT)
    if mode == "exit_early":
        os._exit(3)
    if mode == "garbage_result":  # what a non-atomic write cut by a kill would leave
        (workdir / "result.json").write_text('{"status": "ok", "lat', encoding="utf-8")
        os._exit(0)
    if mode == "raise":
        msg = "simulated build failure"
        raise RuntimeError(msg)
    while mode == "hang_build":
        time.sleep(1)
    phase("measure")
    while mode == "hang_measure":
        time.sleep(1)
    if mode == "output":
        print("python stdout line", flush=True)
        print("python stderr line", file=sys.stderr, flush=True)
        libc = ctypes.CDLL(None)
        libc.printf(b"native printf line\n")
        libc.fflush(None)
        os.write(2, b"native fd2 line\n")
    return {"mode": mode}


def hang_with_pids(job: dict[str, Any], workdir: Path, phase: Callable[[str], None]) -> dict[str, Any]:
    """Write ``pid ppid`` to ``job["pid_file"]`` and hang (for the death-chain tests)."""
    phase("build")
    tmp = Path(job["pid_file"] + ".tmp")
    tmp.write_text(f"{os.getpid()} {os.getppid()}\n", encoding="utf-8")
    os.replace(tmp, job["pid_file"])
    while True:
        time.sleep(1)


def hang_first_with_pids(job: dict[str, Any], workdir: Path, phase: Callable[[str], None]) -> dict[str, Any]:
    """Write ``pid ppid attempt`` to ``job["pid_file"]`` and hang in ``job.get("phase", "build")``,
    on the first attempt only (on every one with ``job["every"]``); a later attempt of the same
    candidate (its folder kept) returns ``{"attempt": N}`` (for the infrastructure-death tests)."""
    marks = workdir / "attempts"
    attempt = len(marks.read_text(encoding="utf-8").split()) + 1 if marks.exists() else 1
    with marks.open("a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
    phase("build")
    if job.get("phase") == "measure":
        phase("measure")
    if attempt == 1 or job.get("every"):
        tmp = Path(job["pid_file"] + ".tmp")
        tmp.write_text(f"{os.getpid()} {os.getppid()} {attempt}\n", encoding="utf-8")
        os.replace(tmp, job["pid_file"])
        while True:
            time.sleep(1)
    phase("measure")
    return {"attempt": attempt}


def cuda_probe(job: dict[str, Any], workdir: Path, phase: Callable[[str], None]) -> dict[str, Any]:
    """What a torch child of the fork server sees at its entry (torch imported, CUDA not
    initialised); its start-up phase includes importing torch, Inductor and the model's module
    (nothing when preloaded); then the seconds to initialise the device and, with ``job["model"]``, to build
    and run that torch factory model once (eager) on ``job["device"]``."""
    seen: dict[str, Any] = {"pid": os.getpid(), "ppid": os.getppid(), "torch_preloaded": "torch" in sys.modules}
    import torch

    seen["cuda_initialized_at_entry"] = torch.cuda.is_initialized()
    import torch._dynamo
    import torch._inductor.compile_fx  # noqa: F401 - what a candidate needs before it works

    from gptuner_core.backends.torch_inductor.model import warm_import

    if job.get("model"):
        warm_import(job["model"])  # the model's module (torchvision, say)
    device = str(job.get("device", "cuda"))
    phase("build")
    t0 = time.perf_counter()
    torch.zeros(1, device=device)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seen["device_init_s"] = round(time.perf_counter() - t0, 3)
    if job.get("model"):
        from gptuner_core.backends.torch_inductor.model import load_model

        t1 = time.perf_counter()
        loaded = load_model(job["model"])
        module = loaded.module.to(device)
        with torch.no_grad():
            module(*(x.to(device) for x in loaded.example_inputs))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seen["model_s"] = round(time.perf_counter() - t1, 3)
    phase("measure")
    return seen
