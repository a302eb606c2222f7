"""The backend contract: describe knobs, build a route into an artifact, run it, time it.

A backend never runs inside the tuner process for build/run/measure: the engine calls
:meth:`Backend.build` and :meth:`Backend.load` inside a fresh ``spawn`` child per candidate
(see ``gptuner_core.engine.process.isolation``), so a crash, hang or out-of-memory only kills that child.
:meth:`Backend.describe`, :meth:`Backend.availability`, :meth:`Backend.input_specs` and
:meth:`Backend.environment` run in the parent and must be cheap and side-effect free.

Heavy libraries (onnxruntime, tensorrt, torch, cuda) are imported inside methods, never at module
import time, so ``import gptuner_core`` works anywhere.

Timing: a :class:`Runner` exposes ``time_calls(n)``, which runs the model ``n`` times back-to-back
on the prepared inputs and returns the elapsed time in nanoseconds measured with the most precise
clock the backend has (``time.perf_counter_ns`` on the CPU, CUDA events on a GPU). The shared
measurement layer (``gptuner_core.measurement``) decides warm-up, how many samples and when to stop.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.options import Option
    from gptuner_core.routes import Route


@dataclass(frozen=True, slots=True, kw_only=True)
class Availability:
    """Whether a backend can run here; ``reason`` says precisely why not."""

    available: bool
    reason: str = ""
    version: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorSpec:
    """One model input or output. ``shape`` uses ``None`` (or a name string) for dynamic dims."""

    name: str
    dtype: str
    shape: tuple[int | str | None, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildResult:
    """What :meth:`Backend.build` produced.

    Attributes:
        artifact: the engine / optimized model / generated-code directory. Hashed by the engine for
            duplicate detection (a directory is hashed file by file, in sorted order).
        effective_route: the route the backend really applied, in ``-name=value`` form (may differ
            from the requested one when the backend normalizes or overrides a value).
        info: JSON-able details for the dashboard (e.g. ``{"layers": [...]}``, applied options,
            transform timings). Must stay small (< 1 MB); large data goes to files beside the
            artifact, referenced by path.
    """

    artifact: Path
    effective_route: str
    info: dict[str, Any] = field(default_factory=dict)


class Runner(abc.ABC):
    """A loaded artifact, ready to run. Use as a context manager; ``close`` frees resources.

    :meth:`prepare` and :meth:`time_calls` are template methods: the base checks that inputs
    were prepared before timing and that ``n >= 1`` (one message for every backend);
    subclasses implement :meth:`_prepare` and :meth:`_time_calls`.
    """

    _ready: bool = False
    #: what this runner runs, when the backend knows it better than the artifact's bytes (torch:
    #: the sha256 of the code compiled in this process); ``None``: the artifact's own sha256
    identity: str | None = None

    @abc.abstractmethod
    def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run once on host arrays and return host arrays keyed by output name."""

    def prepare(self, feeds: dict[str, np.ndarray]) -> None:
        """Bind the inputs used by :meth:`time_calls` (copy to device, allocate outputs)."""
        self._ready = False
        self._prepare(feeds)
        self._ready = True

    def time_calls(self, n: int) -> int:
        """Run the prepared inputs ``n`` times back-to-back; return elapsed nanoseconds."""
        from gptuner_core.errors import BackendError

        if not self._ready:
            msg = f"{type(self).__name__}.time_calls() before prepare(): bind the inputs first"
            raise BackendError(msg)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            msg = f"time_calls(n) needs an integer n >= 1 (got {n!r})"
            raise BackendError(msg)
        return self._time_calls(n)

    @abc.abstractmethod
    def _prepare(self, feeds: dict[str, np.ndarray]) -> None:
        """Bind ``feeds`` for timing (called by :meth:`prepare`)."""

    @abc.abstractmethod
    def _time_calls(self, n: int) -> int:
        """Time ``n`` calls of the prepared inputs, in nanoseconds (``n >= 1``, prepared)."""

    def telemetry(self) -> dict[str, Any]:
        """Environment readings for the current measurement window (clocks, temperature...)."""
        return {}

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release sessions, contexts and device memory."""

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Backend(abc.ABC):
    """A compiler/runtime whose build routes gptuner tunes.

    Subclasses set ``name`` and implement the abstract methods. ``options`` are backend options of
    the study (e.g. ``{"workspace_mb": 1024}``) validated by :meth:`validate_options`.
    """

    name: ClassVar[str] = ""
    #: whether building touches the device the candidates are measured on (TensorRT times
    #: tactics on the GPU, torch/Triton benchmark kernels, ONNX Runtime quantizes on the CPU it
    #: is measured on): such builds never overlap a measurement when building ahead
    build_uses_device: ClassVar[bool] = True
    #: importing the framework costs seconds (torch): a long-lived process (the dashboard) asks
    #: this backend about a model in a child process (:mod:`gptuner_core.backends.probe`)
    heavy_import: ClassVar[bool] = False
    #: the artifact is compiled for static input shapes (torch.compile): :meth:`build` takes
    #: ``batch_size``, the study's batch (what the accuracy gate checks and the samples time),
    #: and compiles for it, so that no measuring process compiles another shape in its turn
    compiles_for_batch: ClassVar[bool] = False
    #: option name -> :class:`gptuner_core.options.Option` (a ``(description, default)`` pair
    #: is read as an Option taking any value); drives CLI help and the dashboard form.
    option_declarations: ClassVar[dict[str, Any]] = {}

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self.options = self.validate_options(options or {})

    @classmethod
    def declared_options(cls) -> dict[str, Option]:
        """The backend's options as :class:`Option` records."""
        from gptuner_core.options import Option

        out = {}
        for key, decl in cls.option_declarations.items():
            if isinstance(decl, Option):
                out[key] = decl
            else:
                description, default = decl
                out[key] = Option(description=description, default=default, type=None)
        return out

    @classmethod
    def validate_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """Reject unknown options with a message listing the allowed ones; fill defaults."""
        from gptuner_core.options import validate_options

        return validate_options("backend", cls.name, cls.declared_options(), options)

    @classmethod
    @abc.abstractmethod
    def availability(cls) -> Availability:
        """Probe the library/device without side effects; never raises."""

    @abc.abstractmethod
    def describe(self, model: Path) -> KnobDatabase:
        """Knob database for this model, in TensorRT's ``all_build_routes`` schema."""

    @abc.abstractmethod
    def input_specs(self, model: Path) -> list[TensorSpec]:
        """The model's inputs (names, dtypes, shapes), raising BackendError on a bad model."""

    def output_specs(self, model: Path) -> list[TensorSpec] | None:
        """The model's outputs (names, dtypes, shapes) for checking the accuracy gate's outputs
        and slices before a study starts; ``None`` when the backend cannot tell without building."""
        return None

    @abc.abstractmethod
    def environment(self) -> dict[str, str]:
        """Fingerprint parts: ``backend_version``, ``device``, ``driver``, ``runtime``, ... ."""

    @abc.abstractmethod
    def build(
        self,
        model: Path,
        route: Route,
        workdir: Path,
        *,
        calibration: dict[str, np.ndarray] | None = None,
    ) -> BuildResult:
        """Build ``route`` for ``model`` into ``workdir`` (runs in the candidate's child process).

        ``calibration`` holds named input arrays for precision transforms that need calibration.
        A backend that :attr:`compiles_for_batch` also takes ``batch_size`` (keyword).
        Raise :class:`gptuner_core.errors.BackendError` with a clear message on a build failure.
        """

    @abc.abstractmethod
    def load(self, build: BuildResult) -> Runner:
        """Load a built artifact for running (runs in the candidate's child process)."""

    def load_ahead(self, build: BuildResult) -> Runner:
        """:meth:`load` for a process that waits for its device turn afterwards (a round's
        process started ahead): launch nothing on the measuring device before the runner's first
        call. The default is :meth:`load` (loading runs nothing on the device)."""
        return self.load(build)

    def model_files(self, model: Path) -> list[Path]:
        """The files ``model`` is made of: the model itself, then any data files it needs beside
        it (ONNX external data). Fingerprints hash them all and model copies carry them all."""
        return [Path(model)]

    def artifact_files(self, build: BuildResult) -> list[tuple[Path, str]]:
        """Files outside ``build.artifact`` that it needs to open: ``(file, path relative to the
        artifact's folder)``, copied beside it when the artifact leaves its study (``--output``,
        bundles). Default: none, the artifact is self-contained."""
        return []

    def artifact_identity(self, build: BuildResult) -> str | None:
        """A canonical hash of a built artifact for duplicate detection, or ``None`` to let the
        engine hash the artifact's bytes.

        Override when equal builds can differ in bytes (ONNX Runtime names NCHWc nodes randomly
        at ``graph_optimization_level=all``): hash a canonical form, so that two routes whose
        artifacts run the same computation with the same runtime options get the same identity.
        """
        return None

    def route_uses_device(self, route: Route) -> bool:
        """Whether building ``route`` touches the measuring device (runs kernels or timings
        there), asked in the parent before the build starts. Defaults to the class's
        :attr:`build_uses_device`; override when it depends on the route (torch on a GPU: only
        autotuning and freezing routes run work on the device while building). Building ahead
        never overlaps such a build with a measurement on that device."""
        return bool(self.build_uses_device)

    def load_uses_device(self, route: Route) -> bool:
        """Whether loading a build of ``route`` for measurement (:meth:`load_ahead`, in a
        re-validation round's process that then waits for its turn) runs work on the measuring
        device, asked in the parent. Such a route's round processes are not started ahead: they
        load in their turn, so their loading never runs beside another measurement. Default:
        no (loading ahead launches nothing on the device)."""
        return False

    def loads_side_by_side(self, route: Route) -> bool:
        """Whether processes loading ``route`` on the device (:meth:`load_uses_device`) may load
        together, while the device is held for one of them, and each still run the screened
        code: yes where a load's device work computes (freezing's constant folding), no where it
        times kernels (autotuning: loads side by side could choose others). Such a route's turn
        starts its processes of the next rounds too. Default: no (each loads in its own turn)."""
        return False

    def planned_identity(self, model: Path, route: Route) -> str | None:
        """A key of the configuration ``route`` will build, computed *before* building (cheap,
        parent side), or ``None`` when the backend cannot tell. Two routes with the same key
        build the same artifact, so the engine can skip the second without building it."""
        return None

    def repro(self, model: Path, route: Route) -> dict[str, str]:
        """Commands that reproduce this candidate outside gptuner, keyed by kind ("shell", ...)."""
        return {}

