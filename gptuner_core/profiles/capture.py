"""The one entry the engine calls in a candidate's child process after measuring.

``capture_profile(backend_name, build, runner, feeds, workdir)`` profiles the candidate with its
backend family's profiler and writes ``workdir/profile.json``. It runs strictly after the latency
samples were taken and never alters the measured runner's configuration: ONNX Runtime and
TensorRT profile in a separate session/context, torch runs the profiler only around its own
calls and stops it before returning. A profiling failure is returned as a state (the
``ProfileOutcome`` says why), never raised into the candidate's result.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ProfileError
from gptuner_core.profiles.records import PROFILE_NAME


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.backends._base import BuildResult
    from gptuner_core.profiles.records import LayerProfile

#: backend name -> profiler family
FAMILIES = {"onnxruntime": "onnxruntime", "torch": "torch", "tensorrt": "tensorrt"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileOutcome:
    """Where the profile went (``path``), or why there is none (``error``)."""

    path: Path | None
    error: str = ""
    seconds: float = 0.0


def profile_build(
    backend_name: str,
    build: BuildResult,
    runner: Any,
    feeds: dict[str, np.ndarray],
    workdir: str | Path,
    *,
    model: str | Path | None = None,
    runs: int = 30,
) -> LayerProfile:
    """The :class:`LayerProfile` of one built candidate (raises :class:`ProfileError`)."""
    family = FAMILIES.get(backend_name)
    if family == "onnxruntime":
        from gptuner_core.profiles import onnxruntime as ort_profile

        return ort_profile.profile(build, feeds, workdir=workdir, model=model, runs=runs)
    if family == "torch":
        from gptuner_core.profiles import torch as torch_profile

        return torch_profile.profile(runner, feeds, generated=build.artifact, runs=runs)
    if family == "tensorrt":
        from gptuner_core.profiles import tensorrt as trt_profile

        return trt_profile.profile(build, feeds, model=model, runs=runs)
    msg = f"no layer profiler for backend '{backend_name}' (profiled backends: {sorted(set(FAMILIES))})"
    raise ProfileError(msg)


def capture_profile(
    backend_name: str,
    build: BuildResult,
    runner: Any,
    feeds: dict[str, np.ndarray],
    workdir: str | Path,
    *,
    model: str | Path | None = None,
    runs: int = 30,
) -> Path:
    """Profile a measured candidate and write ``workdir/profile.json``; return its path.

    Args:
        backend_name: the study's backend (``onnxruntime``, ``torch``, ``tensorrt``).
        build: the candidate's build result; runner: its loaded runner (torch reuses it).
        feeds: the batch the latency was measured on.
        workdir: the candidate folder (``candidates/NNNNN``).
        model: the user's model file, so ONNX origins name its nodes.
        runs: profiled inferences.
    """
    Path(workdir).mkdir(parents=True, exist_ok=True)
    profile = profile_build(backend_name, build, runner, feeds, workdir, model=model, runs=runs)
    return profile.save(Path(workdir) / PROFILE_NAME)


def try_capture_profile(
    backend_name: str,
    build: BuildResult,
    runner: Any,
    feeds: dict[str, np.ndarray],
    workdir: str | Path,
    **kwargs: Any,
) -> ProfileOutcome:
    """:func:`capture_profile` that reports failure as a state (for the candidate's child)."""
    import time

    t0 = time.perf_counter()
    try:
        path = capture_profile(backend_name, build, runner, feeds, workdir, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a profile is optional; the candidate stands
        return ProfileOutcome(path=None, error=f"{type(exc).__name__}: {str(exc)[:300]}",
                              seconds=time.perf_counter() - t0)
    return ProfileOutcome(path=path, seconds=time.perf_counter() - t0)
