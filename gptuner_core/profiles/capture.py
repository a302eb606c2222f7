"""The one entry the engine calls in a candidate's child process after measuring.

``capture_profile(backend_name, build, runner, feeds, workdir)`` profiles the candidate with its
backend family's profiler and writes ``workdir/profile.json``. It runs strictly after the latency
samples were taken and never alters the measured runner's configuration: ONNX Runtime and
TensorRT profile in a separate session/context, torch runs the profiler only around its own
calls and stops it before returning. A profiling failure is returned as a state (the
``ProfileOutcome`` says why), never raised into the candidate's result.

In two steps (:func:`record_profile`, then :meth:`ProfileCapture.finish`): what needs the
device first, the rest (reading the profiler's events, mapping kernels to modules, writing the
file) once the candidate has given the device back, so that the next candidate measures
meanwhile. torch splits that way; the other families do all of it in the first step.
"""

from __future__ import annotations

import time
from collections.abc import Callable
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


def _recorded(
    backend_name: str,
    build: BuildResult,
    runner: Any,
    feeds: dict[str, np.ndarray],
    workdir: str | Path,
    *,
    model: str | Path | None = None,
    runs: int = 30,
) -> Callable[[], LayerProfile]:
    """Run what needs the device now; the returned function makes the :class:`LayerProfile`
    (raises :class:`ProfileError`)."""
    family = FAMILIES.get(backend_name)
    if family == "onnxruntime":
        from gptuner_core.profiles import onnxruntime as ort_profile

        done = ort_profile.profile(build, feeds, workdir=workdir, model=model, runs=runs)
        return lambda: done
    if family == "torch":
        from gptuner_core.profiles import torch as torch_profile

        return torch_profile.record(runner, feeds, generated=build.artifact, runs=runs)
    if family == "tensorrt":
        from gptuner_core.profiles import tensorrt as trt_profile

        done = trt_profile.profile(build, feeds, model=model, runs=runs)
        return lambda: done
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
    profile = _recorded(backend_name, build, runner, feeds, workdir, model=model, runs=runs)()
    return profile.save(Path(workdir) / PROFILE_NAME)


def _reason(exc: Exception) -> str:
    """Why a candidate has no profile (its outcome's ``error``)."""
    return f"{type(exc).__name__}: {str(exc)[:300]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileCapture:
    """A profile whose device part ran (:func:`record_profile`): :meth:`finish` makes and
    writes it, or says why there is none."""

    workdir: Path
    make: Callable[[], LayerProfile] | None
    error: str = ""
    seconds: float = 0.0

    def finish(self) -> ProfileOutcome:
        if self.make is None:
            return ProfileOutcome(path=None, error=self.error, seconds=self.seconds)
        t0 = time.perf_counter()
        try:
            path = self.make().save(self.workdir / PROFILE_NAME)
        except Exception as exc:  # noqa: BLE001 - a profile is optional; the candidate stands
            return ProfileOutcome(path=None, error=_reason(exc),
                                  seconds=self.seconds + time.perf_counter() - t0)
        return ProfileOutcome(path=path, seconds=self.seconds + time.perf_counter() - t0)


def record_profile(
    backend_name: str,
    build: BuildResult,
    runner: Any,
    feeds: dict[str, np.ndarray],
    workdir: str | Path,
    **kwargs: Any,
) -> ProfileCapture:
    """The device part of :func:`capture_profile`, failure as a state (the candidate's child):
    what remains is the capture's :meth:`~ProfileCapture.finish`, which needs no device."""
    t0 = time.perf_counter()
    folder = Path(workdir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        make = _recorded(backend_name, build, runner, feeds, folder, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a profile is optional; the candidate stands
        return ProfileCapture(workdir=folder, make=None, error=_reason(exc),
                              seconds=time.perf_counter() - t0)
    return ProfileCapture(workdir=folder, make=make, seconds=time.perf_counter() - t0)

