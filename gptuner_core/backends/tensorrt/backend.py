"""``TensorRTBackend``: builds and runs candidates with the TensorRT >= 11.1 Python API.

Knobs: TensorRT's ``config.all_build_routes`` (cached per TensorRT/tuner version, see
:mod:`knob_cache`) plus gptuner's own ``-gptuner:precision`` (an ONNX transform, see
:mod:`precision`). Build: :mod:`build`. Run/measure: :mod:`runner` (cuda-python, CUDA events).

Example:
    >>> from gptuner_core.backends import get_backend          # doctest: +SKIP
    >>> be = get_backend("tensorrt", {"timing_cache": "isolated"})
    >>> db = be.describe(Path("model.onnx"))
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

from gptuner_core.backends._base import Availability
from gptuner_core.backends._base import Backend
from gptuner_core.backends._base import BuildResult
from gptuner_core.backends._base import Runner
from gptuner_core.backends._base import TensorSpec
from gptuner_core.backends.tensorrt import knob_cache
from gptuner_core.backends.tensorrt import probe
from gptuner_core.backends.tensorrt.build import BuildOptions
from gptuner_core.backends.tensorrt.build import onnx_input_specs
from gptuner_core.backends.tensorrt.options import COMMON_OPTIONS
from gptuner_core.backends.tensorrt.precision import own_knobs
from gptuner_core.backends.tensorrt.repro import repro_commands
from gptuner_core.errors import BackendUnavailableError
from gptuner_core.knobs import KnobDatabase


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.routes import Route


def with_own_knobs(db: KnobDatabase) -> KnobDatabase:
    """TensorRT's knobs followed by gptuner's own (precision) knobs."""
    extra = [k for k in own_knobs() if k.name not in db]
    return KnobDatabase(db.tuner_version, [*db.knobs, *extra])


class TensorRTBackend(Backend):
    """TensorRT >= 11.1 with the Global Performance Tuner, driven through its Python API."""

    name: ClassVar[str] = "tensorrt"
    option_declarations: ClassVar[dict[str, tuple[str, Any]]] = dict(COMMON_OPTIONS)

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.build_options = BuildOptions.from_options(self.options)

    @classmethod
    def availability(cls) -> Availability:
        res = probe.probe_tensorrt()
        if not res.available:
            return Availability(available=False, reason=res.reason, version=res.version)
        cuda_reason = probe.probe_cuda_python()
        if cuda_reason:
            return Availability(available=False, reason=cuda_reason, version=res.version)
        try:  # warm the knob cache while we hold the string
            knob_cache.store(res.version, res.routes_json)
        except Exception:  # noqa: BLE001 - a cache problem must not hide availability
            pass
        return Availability(available=True, version=res.version)

    def _trt_db(self) -> KnobDatabase:
        res = probe.probe_tensorrt(create_builder=False)
        if not res.available:
            raise BackendUnavailableError(res.reason)

        def fetch() -> str:
            full = probe.probe_tensorrt()
            if not full.available:
                raise BackendUnavailableError(full.reason)
            return full.routes_json

        return knob_cache.knob_database(res.version, fetch)

    def describe(self, model: Path) -> KnobDatabase:
        return with_own_knobs(self._trt_db())

    def input_specs(self, model: Path) -> list[TensorSpec]:
        return onnx_input_specs(model)

    def output_names(self, model: Path) -> list[str] | None:
        from gptuner_core.backends._base import onnx_output_names

        return onnx_output_names(model)

    def environment(self) -> dict[str, str]:
        import tensorrt as trt

        env = {"backend_version": str(trt.__version__), "runtime": "tensorrt-python"}
        env.update(gpu_environment())
        return env

    def build(
        self,
        model: Path,
        route: Route,
        workdir: Path,
        *,
        calibration: dict[str, np.ndarray] | None = None,
    ) -> BuildResult:
        from gptuner_core.backends.tensorrt.build import build_engine

        return build_engine(
            model, route, workdir, self.describe(model), self.build_options, calibration=calibration
        )

    def load(self, build: BuildResult) -> Runner:
        from gptuner_core.backends.tensorrt.runner import TensorRTRunner

        return TensorRTRunner(
            str(build.artifact),
            cuda_graph=bool(self.options["cuda_graph"]),
            spin_wait=bool(self.options["spin_wait"]),
        )

    def repro(
        self, model: Path, route: Route, *, feed_shapes: dict[str, tuple[int, ...]] | None = None
    ) -> dict[str, str]:
        """Shell + Python reproduction; ``feed_shapes`` (the dataset's) fill dynamic inputs."""
        return repro_commands(model, route, self.options, feed_shapes=feed_shapes)


def gpu_environment() -> dict[str, str]:
    """GPU name, driver and CUDA driver version via NVML; empty when nvidia-ml-py is missing."""
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(h)
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
        as_text = [x.decode() if isinstance(x, bytes) else str(x) for x in (name, driver)]
        return {
            "device": as_text[0],
            "driver": as_text[1],
            "cuda_driver": f"{cuda // 1000}.{(cuda % 1000) // 10}",
            "compute_capability": f"{major}.{minor}",
        }
    except Exception:  # noqa: BLE001 - optional
        return {}
