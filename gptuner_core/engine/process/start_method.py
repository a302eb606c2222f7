"""How a candidate's process starts: forked from a pre-imported launcher, or spawned.

``auto`` (the default) forks every job whose backend is known to be safe to fork from a launcher
(``launcher.py``) on Linux: the CPU backends from the ``cpu`` launcher, the torch backend (CPU or
GPU) from the ``torch`` launcher, the fork server of CUDA backends, which holds torch, Inductor,
the backend and the user's model module imported but never initialises CUDA, so each child
initialises CUDA itself. Anything else (TensorRT, trtexec, plug-ins) gets a spawned interpreter.
``GPTUNER_START_METHOD=spawn`` spawns every child (the old path); a launcher that cannot fork a
clean child makes the caller spawn, with the reason logged once.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

from gptuner_core.engine.process.startup_trace import step
from gptuner_core.errors import ConfigError


#: ``auto`` (default: the launcher when the job allows it), ``launcher`` or ``spawn``
START_METHOD_ENV = "GPTUNER_START_METHOD"
START_METHODS = ("auto", "launcher", "spawn")
#: backends whose children may be forked from the ``cpu`` launcher: CPU only, no CUDA anywhere
FORK_SAFE_BACKENDS = frozenset({
    "onnxruntime", "gptuner_core.backends.onnxruntime:OnnxRuntimeBackend",
    "replay", "gptuner_core.backends.replay:ReplayBackend",
    "gptuner_core.testing.faulty_backend:FaultyBackend",
})
#: backends whose children are forked from the ``torch`` launcher (torch preloaded, no CUDA)
TORCH_BACKENDS = frozenset({"torch", "gptuner_core.backends.torch_inductor:TorchInductorBackend"})


def launcher_kind(job: dict[str, Any]) -> str | None:
    """The launcher that may fork ``job``'s child (``cpu``, ``torch``), or ``None``: spawn it."""
    backend = str(job.get("backend") or "")
    if backend in TORCH_BACKENDS:
        return "torch"
    return "cpu" if backend in FORK_SAFE_BACKENDS else None


def needs_clean_interpreter(job: dict[str, Any]) -> bool:
    """Whether ``job`` must get a spawned interpreter: a backend no launcher is known to be safe
    for (TensorRT, trtexec, plug-ins)."""
    return launcher_kind(job) is None


def warm_models(job: dict[str, Any]) -> tuple[str, ...]:
    """The model a ``torch`` launcher imports before forking ``job`` (a factory's module)."""
    model = str(job.get("model") or "")
    if launcher_kind(job) != "torch" or not model or model.endswith(".pt2"):
        return ()
    return (model,)


def start_method_for(job: dict[str, Any], requested: str | None = None) -> str:
    """``launcher`` or ``spawn`` for this job: ``requested``, else ``$GPTUNER_START_METHOD``,
    else ``auto`` (the launcher on Linux unless :func:`needs_clean_interpreter`)."""
    method = requested or os.environ.get(START_METHOD_ENV) or "auto"
    if method not in START_METHODS:
        source = "start method" if requested else START_METHOD_ENV
        msg = f"{source} must be one of {', '.join(START_METHODS)} (got {method!r})"
        raise ConfigError(msg)
    if method == "auto":
        linux = sys.platform.startswith("linux")
        method = "launcher" if linux and not needs_clean_interpreter(job) else "spawn"
    return method


def prestart(job: dict[str, Any], start_method: str | None = None) -> None:
    """Start the launcher in the background when ``job``'s kind will use it, so that the
    study's set-up, not its first candidate, pays for the launcher's imports (a ``torch``
    launcher's include the job's model module)."""
    if start_method_for(job, start_method) == "launcher":
        import threading

        from gptuner_core.engine.process import launcher

        kind = launcher_kind(job) or "cpu"

        def start() -> None:
            with contextlib.suppress(launcher.LauncherUnavailable, OSError):
                with step("cli", f"{kind} fork server started"):
                    server = launcher.shared(kind)
                server.warm(warm_models(job))

        threading.Thread(target=start, name="gptuner-launcher-start", daemon=True).start()
