"""A small real ONNX Runtime backend that can be told to misbehave, for isolation tests.

Its knob ``-fault:mode`` makes the candidate's child process really segfault, abort, hang in
the build or in the measurement, exit without a result, or fail its build — the failures a
TensorRT/Myelin build can show — so the engine's classification is exercised end to end with
real processes. Other routes run the model with a real ``onnxruntime.InferenceSession``.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends._base import Availability
from gptuner_core.backends._base import Backend
from gptuner_core.backends._base import BuildResult
from gptuner_core.backends._base import Runner
from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import BackendError
from gptuner_core.knobs import Knob
from gptuner_core.knobs import KnobDatabase


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.routes import Route

#: ``-fault:tie``: synthetic milliseconds per timed call (two finalists that tie, both 2x the default)
TIE_MS = {"slow": 20, "x": 10, "y": 10}
MODES = ("none", "segfault", "abort", "hang_build", "hang_measure", "exit_early", "build_error")


class _OrtRunner(Runner):
    def __init__(self, path: Path, threads: int, mode: str, call_ms: int = 0,
                 synthetic_ms: float | None = None, first_ms: int = 0, hold_first: str = "") -> None:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.log_severity_level = 3
        self.sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        self.mode = mode
        self.call_s = call_ms / 1000
        self.first_s = first_ms / 1000  # the first call's set-up (``-fault:first_ms``)
        self.hold_first = hold_first if first_ms else ""
        self.feeds: dict[str, Any] = {}
        # a synthetic latency (``-fault:tie``): the calls run, but the time reported is this many
        # ms per call times a per-process factor (1 % between processes, as fresh processes
        # differ): the outcome is the same on a quiet and on a busy machine
        self.synthetic_ns = None
        if synthetic_ms is not None:
            import numpy as np

            factor = np.random.default_rng().lognormal(0.0, 0.01)
            self.synthetic_ns = synthetic_ms * 1e6 * factor

    def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if self.first_s:
            time.sleep(self.first_s)
            self.first_s = 0.0
            deadline = time.monotonic() + 30  # held (``hold_first_calls``): at most 30 s
            while self.hold_first and not Path(self.hold_first).exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        names = [o.name for o in self.sess.get_outputs()]
        return dict(zip(names, self.sess.run(None, feeds), strict=True))

    def _prepare(self, feeds: dict[str, np.ndarray]) -> None:
        self.feeds = feeds
        if self.mode == "hang_measure":
            while True:
                time.sleep(1)

    def _time_calls(self, n: int) -> int:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            self.sess.run(None, self.feeds)
            if self.call_s:
                time.sleep(self.call_s)
        if self.synthetic_ns is not None:
            return int(n * self.synthetic_ns)
        return time.perf_counter_ns() - t0


class FaultyBackend(Backend):
    name = "faulty"
    option_declarations = {
        "device_free_builds": ("builds of routes with -fault:sleep_ms > 0 count as not touching the "
                               "measured device (tests of building beside a measurement)", False),
        "hold_first_calls": ("a file: the first call of a route with -fault:first_ms > 0 and "
                             "-fault:sleep_ms > 0 waits until it exists, at most 30 s (tests of what "
                             "runs beside first calls)", ""),
        "hold_builds": ("a file: builds of routes with -fault:sleep_ms > 0 wait until it exists "
                        "(tests of what happens while candidates are still building)", ""),
    }

    def route_uses_device(self, route: Route) -> bool:
        if self.options.get("device_free_builds") in (True, "true", "1", 1):
            return route.get("-fault:sleep_ms", "0") == "0"
        return True

    @classmethod
    def availability(cls) -> Availability:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            return Availability(available=False, reason=str(exc))
        return Availability(available=True, version=ort.__version__)

    def describe(self, model: Path) -> KnobDatabase:
        return KnobDatabase("faulty-1", [
            Knob(name="-fault:mode", values=MODES, default="none",
                 help="make the candidate process misbehave"),
            Knob(name="-ort:threads", values=("0", "1"), default="0", help="intra-op threads"),
            Knob(name="-fault:label", values=("a", "b"), default="a",
                 help="changes nothing in the artifact (its routes are duplicates)"),
            Knob(name="-fault:sleep_ms", values=("0", "100", "200", "300", "1500"), default="0",
                 help="sleep this long in the build (slow builds)"),
            Knob(name="-fault:call_ms", values=("0", "40"), default="0",
                 help="sleep this long in every timed call (slow engines: few latency samples)"),
            Knob(name="-fault:first_ms", values=("0", "1500"), default="0",
                 help="sleep this long in the first call (slow first calls: lazy CUDA module "
                      "loading, CUDA graph capture)"),
            Knob(name="-fault:tie", values=tuple(TIE_MS), default="slow",
                 help="a tie: 'x' and 'y' are distinct artifacts that report the same synthetic "
                      "latency, half the default 'slow' (only where the expression names this knob)"),
        ])

    def input_specs(self, model: Path) -> list[TensorSpec]:
        import onnxruntime as ort

        try:
            sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001
            msg = f"cannot load ONNX model '{model}': {exc}"
            raise BackendError(msg) from None
        return [
            TensorSpec(name=i.name, dtype=i.type, shape=tuple(d if isinstance(d, int) else None for d in i.shape))
            for i in sess.get_inputs()
        ]

    def output_specs(self, model: Path) -> list[TensorSpec] | None:
        from gptuner_core.backends.onnxruntime.model import load_model
        from gptuner_core.backends.onnxruntime.model import output_specs

        try:
            return output_specs(load_model(model, check=False))
        except Exception:  # noqa: BLE001 - not an ONNX file: the build will say what it is
            return None

    def environment(self) -> dict[str, str]:
        import onnxruntime as ort

        return {"backend_version": ort.__version__, "device": "cpu"}

    def build(self, model: Path, route: Route, workdir: Path, *,
              calibration: dict[str, np.ndarray] | None = None) -> BuildResult:
        route.validate(self.describe(model))
        mode = route.get("-fault:mode", "none")
        if mode == "segfault":
            ctypes.string_at(0)
        if mode == "abort":
            os.kill(os.getpid(), signal.SIGABRT)
        if mode == "hang_build":
            while True:
                time.sleep(1)
        if mode == "exit_early":
            os._exit(3)
        if mode == "build_error":
            msg = "builder rejected the route: simulated Myelin failure for -fault:mode=build_error"
            raise BackendError(msg)
        time.sleep(int(route.get("-fault:sleep_ms", "0")) / 1000)
        hold = str(self.options.get("hold_builds") or "")
        while hold and route.get("-fault:sleep_ms", "0") != "0" and not Path(hold).exists():
            time.sleep(0.02)
        workdir.mkdir(parents=True, exist_ok=True)
        artifact = workdir / "model.onnx"
        shutil.copy2(model, artifact)
        threads = route.get("-ort:threads", "0")
        sleep = route.get("-fault:sleep_ms", "0")
        # knobs that leave the route and the runtime config as before where they are 0
        extra = {k: v for k in ("call_ms", "first_ms") if (v := route.get(f"-fault:{k}", "0")) != "0"}
        tie = route.get("-fault:tie")
        return BuildResult(
            artifact=artifact,
            effective_route=f"-fault:mode={mode} -ort:threads={threads} -fault:sleep_ms={sleep}"
            + "".join(f" -fault:{k}={v}" for k, v in extra.items()),
            info={"runtime_config": {"threads": threads, "mode": mode, "sleep_ms": sleep, **extra,
                                     **({"tie": tie} if tie is not None else {})}},
        )

    def load(self, build: BuildResult) -> Runner:
        cfg = build.info.get("runtime_config", {})
        tie = cfg.get("tie")
        return _OrtRunner(build.artifact, int(cfg.get("threads", 0)), cfg.get("mode", "none"),
                          int(cfg.get("call_ms", 0)), TIE_MS[tie] if tie is not None else None,
                          int(cfg.get("first_ms", 0)),
                          str(self.options.get("hold_first_calls") or "") if cfg.get("sleep_ms", "0") != "0" else "")
