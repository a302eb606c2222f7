"""``TorchInductorBackend``: tune ``torch.compile`` (Inductor) build routes on a GPU or the CPU.

Registered (by the engine) as ``gptuner_core.backends.torch_inductor:TorchInductorBackend``.
See :mod:`.knobs` for the knobs, :mod:`.model` for the accepted model forms, :mod:`.build` for
the build and its artifact, :mod:`.runner` for running and timing.

.. note::
   :meth:`TorchInductorBackend.build` keeps the compiled module in a module-level cache keyed by
   the artifact path; :meth:`TorchInductorBackend.load` in the same process reuses it. In another
   process (building ahead measures in a second process), ``load`` compiles the route again from
   the build info with the candidate's own Inductor cache: FX-graph and AOTAutograd cache hits,
   kernels loaded, not generated (``torch.compile`` output cannot be reloaded directly). It
   prints the seconds and cache counters of that load to the candidate's log.
   :meth:`TorchInductorBackend.route_uses_device` tells the gate which builds run work on the
   GPU (see :mod:`.device_use`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends._base import Availability
from gptuner_core.backends._base import Backend
from gptuner_core.backends._base import BuildResult
from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.backends.torch_inductor.runner import TorchRunner
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.routes import Route

_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "cpu"


class TorchInductorBackend(Backend):
    """PyTorch ``torch.compile`` with the Inductor compiler (Triton on CUDA, C++ on the CPU).

    Example:
        >>> backend = TorchInductorBackend({"device": "cpu"})
        >>> db = backend.describe(Path("assets/torch_digits_cnn.py:factory"))
        >>> build = backend.build(Path("assets/torch_digits_cnn.py:factory"),
        ...                       Route.parse("-torch:precision=fp16"), Path("work/c0"))
        >>> with backend.load(build) as runner:
        ...     outputs = runner.infer({"x": batch})
    """

    name = "torch"
    heavy_import = True  # the dashboard asks it about models in a child process
    compiles_for_batch = True  # torch.compile(dynamic=False): one graph per input shape
    option_declarations = {
        "device": (
            "where to compile and run: auto (cuda:0 when CUDA is available, else cpu), cpu, "
            "cuda or cuda:N",
            "auto",
        ),
        "compile_threads": (
            "Inductor compile worker processes (0: PyTorch's default; 1 compiles in the "
            "candidate's process, the fastest choice on a machine with few cores)",
            0,
        ),
        "threads": (
            "CPU intra-op threads for the compiled C++ kernels and ATen calls, set before "
            "compiling (0: PyTorch's default, one per core); ignored on CUDA",
            0,
        ),
    }

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        device = self.options["device"]
        if not isinstance(device, str) or not _DEVICE.match(device):
            msg = f"torch backend: option 'device' must be auto, cpu, cuda or cuda:N (got {device!r})"
            raise ConfigError(msg)
        for name in ("compile_threads", "threads"):
            value = self.options[name]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                msg = f"torch backend: option '{name}' must be an integer >= 0 (got {value!r})"
                raise ConfigError(msg)
        self._dbs: dict[str, KnobDatabase] = {}

    # -- parent side ----------------------------------------------------------------------------
    @classmethod
    def availability(cls) -> Availability:
        if importlib.util.find_spec("torch") is None:
            return Availability(available=False, reason="No module named 'torch'")
        try:
            version = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            version = "unknown"
        cxx = os.environ.get("CXX", "g++")
        if shutil.which(cxx) is None:
            try:
                import torch

                has_cuda = torch.cuda.is_available()
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                return Availability(available=False, reason=f"import torch failed: {exc}", version=version)
            if not has_cuda:
                reason = (
                    f"no C++ compiler '{cxx}' for Inductor's CPU backend and no CUDA device "
                    "(install g++ or set CXX)"
                )
                return Availability(available=False, reason=reason, version=version)
        return Availability(available=True, version=version)

    def device(self) -> str:
        """The resolved device (``cpu`` or ``cuda:N``) of this backend's ``device`` option."""
        from gptuner_core.backends.torch_inductor.build import resolve_device

        return resolve_device(self.options["device"])

    def knob_database(self, device_type: str) -> KnobDatabase:
        if device_type not in self._dbs:
            from gptuner_core.backends.torch_inductor.knobs import knob_database

            self._dbs[device_type] = knob_database(device_type)
        return self._dbs[device_type]

    def describe(self, model: Path) -> KnobDatabase:
        """Knobs for the resolved device on the installed PyTorch.

        The database does not depend on the model, but the model is loaded once here so a bad
        model reference fails before any candidate is started (BackendError).
        """
        import torch

        from gptuner_core.backends.torch_inductor.model import load_model

        load_model(model)
        return self.knob_database(torch.device(self.device()).type)

    def input_specs(self, model: Path) -> list[TensorSpec]:
        from gptuner_core.backends.torch_inductor.model import load_model

        return load_model(model).input_specs()

    def environment(self) -> dict[str, str]:
        import torch

        device = self.device()
        env = {
            "backend_version": f"torch {torch.__version__}",
            "compiler": "inductor",
        }
        if device.startswith("cuda"):
            from gptuner_core.backends.torch_inductor.runner import nvml_index
            from gptuner_core.measurement.telemetry import gpu_telemetry

            reading = gpu_telemetry(nvml_index(torch.device(device).index or 0))
            env["device"] = str(reading.get("name") or device)
            env["runtime"] = f"cuda {torch.version.cuda}"
            try:
                import triton

                env["runtime"] += f", triton {triton.__version__}"
            except ImportError:
                pass
            try:
                import pynvml

                driver = pynvml.nvmlSystemGetDriverVersion()
                env["driver"] = driver.decode() if isinstance(driver, bytes) else str(driver)
            except Exception:  # noqa: BLE001 - NVML missing: the driver is simply unknown
                env["driver"] = "unknown"
        else:
            env["device"] = _cpu_name()
            env["runtime"] = f"cpu, {os.environ.get('CXX', 'g++')}"
            env["threads"] = str(self.options["threads"] or torch.get_num_threads())
        return env

    def route_uses_device(self, route: Route) -> bool:
        """On the CPU always; on a GPU only for routes that benchmark or compute on the device
        while compiling (autotuning, freezing: ``device_use.DEVICE_OPTIONS``); the others compile
        without running (see :mod:`.device_use`)."""
        from gptuner_core.backends.torch_inductor.device_use import uses_device

        return uses_device(*self._inductor_options(route))

    def _inductor_options(self, route: Route) -> tuple[str, dict[str, Any]]:
        """``(device type, the Inductor config patch route compiles with)``."""
        import torch

        from gptuner_core.backends.torch_inductor import build as B
        from gptuner_core.backends.torch_inductor import knobs as K

        dev_type = torch.device(self.device()).type
        mode, _, explicit = B.route_settings(self.knob_database(dev_type), route)
        return dev_type, K.inductor_options(explicit, mode)

    def load_uses_device(self, route: Route) -> bool:
        """On a GPU, the routes whose compile runs work on the device: from the warm cache too,
        ``freezing`` folds the weights with kernels on the device (seen on the H100: a freezing
        route screened 0.81-0.89x of the default while its round processes loaded beside it,
        1.075x alone), and autotuning options may benchmark there. On the CPU a process loading
        ahead runs nothing and is pinned to the build cores, away from the measured ones."""
        return self.device().startswith("cuda") and self.route_uses_device(route)

    def loads_side_by_side(self, route: Route) -> bool:
        """Freezing's loads compute on the device (the weights folded), the same on every load:
        they may run together. Autotuning's time kernels there (on a cache miss side-by-side
        loads could choose other kernels than the screened build): each loads alone."""
        from gptuner_core.backends.torch_inductor.device_use import TIMING_OPTIONS
        from gptuner_core.backends.torch_inductor.device_use import options_on

        dev_type, options = self._inductor_options(route)
        return dev_type == "cuda" and not options_on(options, TIMING_OPTIONS)

    # -- child side ------------------------------------------------------------------------------
    def build(
        self,
        model: Path,
        route: Route,
        workdir: Path,
        *,
        calibration: dict[str, np.ndarray] | None = None,
        batch_size: int | None = None,
    ) -> BuildResult:
        """Compile ``route`` for ``batch_size`` rows (the study's batch; the model's example
        batch when ``None``); ``calibration`` is unused (no calibrated precision modes)."""
        import torch

        from gptuner_core.backends.torch_inductor import build as B
        from gptuner_core.backends.torch_inductor import model as M

        device = self.device()
        db = self.knob_database(torch.device(device).type)
        loaded = M.load_model_on_one_thread(model)  # builds run side by side, one per build core
        loaded = M.at_batch(loaded, batch_size)
        return B.build(
            loaded,
            db,
            route,
            Path(workdir),
            model_text=str(model),
            device=device,
            compile_threads=int(self.options["compile_threads"]),
            threads=int(self.options["threads"]),
        )

    def load(self, build: BuildResult) -> TorchRunner:
        return self._load(build, run=True)

    def load_ahead(self, build: BuildResult) -> TorchRunner:
        """Compiled from the build's caches without running: nothing is launched on the device
        until the runner's first call (a round's process waiting for its turn)."""
        return self._load(build, run=False)

    def _load(self, build: BuildResult, *, run: bool) -> TorchRunner:
        from gptuner_core.backends.torch_inductor import model as M
        from gptuner_core.backends.torch_inductor.reload import compiled_for
        from gptuner_core.backends.torch_inductor.runner import TorchRunner

        # another process loads from the build's caches: compile workers (PyTorch's default, one
        # per core) would only start up beside the measurement; ahead of its turn, the model is
        # built on one thread (round processes load side by side, one per build core)
        compiled = compiled_for(
            build, self.knob_database, M.load_model if run else M.load_model_on_one_thread,
            int(self.options["compile_threads"]) or 1, run=run,
        )
        return TorchRunner(compiled)

    def repro(self, model: Path, route: Route) -> dict[str, str]:
        """A Python snippet that applies the same configuration to the same model."""
        import torch

        from gptuner_core.backends.torch_inductor import build as B
        from gptuner_core.backends.torch_inductor import knobs as K

        device = self.device()
        db = self.knob_database(torch.device(device).type)
        mode, precision, explicit = B.route_settings(db, route)
        options = K.inductor_options(explicit, mode)
        tf32 = precision == "tf32"
        lines = [
            "import torch",
            f"# model: {model} (load it: a torch.export .pt2 or a factory returning (module, inputs))",
            f"module, inputs = ...  # eval mode; move to {device!r}",
        ]
        if device.startswith("cuda"):
            lines += [
                f"torch.backends.cuda.matmul.allow_tf32 = {tf32}",
                f"torch.backends.cudnn.allow_tf32 = {tf32}",
                f"torch.set_float32_matmul_precision({'high' if tf32 else 'highest'!r})",
            ]
        if precision in ("bf16", "fp16"):
            dtype = B.DTYPES[precision]
            lines.append(f"module = module.to(torch.{dtype}); inputs = [t.to(torch.{dtype}) for t in inputs]")
        lines += [
            "from torch._inductor import config",
            "from torch._inductor.compile_fx import compile_fx",
            f"options = {options!r}",
            "def backend(gm, example_inputs):",
            "    with config.patch(options):",
            "        return compile_fx(gm, example_inputs)",
            "compiled = torch.compile(module, backend=backend, dynamic=False)",
            "with torch.no_grad():",
            "    outputs = compiled(*inputs)",
        ]
        return {"python": "\n".join(lines)}
