"""``TrtexecBackend``: TensorRT through a ``trtexec`` binary, one child per candidate.

``build`` runs ``trtexec --onnx=… --setBuildRoute=… --saveEngine=… --tuningResultFile=…`` (an
argv list) and classifies the child exactly like trtexec's own parent (:mod:`trtexec_protocol`).
``load`` returns :class:`~gptuner_core.backends.tensorrt.trtexec_runner.TrtexecRunner`.

The effective route: trtexec logs ``Using tuning build route: …`` *before* it calls
``setBuildRoute`` and never reads the route back; when TensorRT rejects it, the build fails with
``IBuilderConfig::setBuildRoute failed for: …``. So a successful child proves TensorRT accepted
the request, nothing more: the effective route is the requested one, recorded with
``info["effective_route_source"]`` saying so, and the engine is the source of truth for what was
built (trtexec README §7.8): ``engine_sha256`` and the engine's own layer description
(``--profilingVerbosity=detailed --exportLayerInfo``, parsed into ``info["layers_summary"]`` as the
``tensorrt`` backend does). The log echo is kept only as
``info["trtexec_route_echo"]``.

Also re-exported here: :func:`probe_trtexec`, :func:`follow_tune_run`, :class:`TrtexecRunner`.
"""

from __future__ import annotations

import subprocess
import time
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
from gptuner_core.backends.tensorrt import trtexec_protocol as proto
from gptuner_core.backends.tensorrt.backend import with_own_knobs
from gptuner_core.backends.tensorrt.build import LAYERS_NAME
from gptuner_core.backends.tensorrt.build import TIMING_CACHE_NAME
from gptuner_core.backends.tensorrt.build import BuildOptions
from gptuner_core.backends.tensorrt.build import onnx_input_specs
from gptuner_core.backends.tensorrt.build import resolve_profiles
from gptuner_core.backends.tensorrt.build import sha256_file
from gptuner_core.backends.tensorrt.build import shared_cache_path
from gptuner_core.backends.tensorrt.options import TRTEXEC_OPTIONS
from gptuner_core.backends.tensorrt.precision import OWN_PREFIX
from gptuner_core.backends.tensorrt.precision import PRECISION
from gptuner_core.backends.tensorrt.precision import apply_precision
from gptuner_core.backends.tensorrt.repro import repro_commands
from gptuner_core.backends.tensorrt.route_check import split_route
from gptuner_core.backends.tensorrt.route_check import validate_route
from gptuner_core.backends.tensorrt.trtexec_child import HELP_TIMEOUT_S
from gptuner_core.backends.tensorrt.trtexec_child import TrtexecChildError
from gptuner_core.backends.tensorrt.trtexec_child import probe_trtexec
from gptuner_core.backends.tensorrt.trtexec_child import resolve_executable
from gptuner_core.backends.tensorrt.trtexec_child import run_child
from gptuner_core.backends.tensorrt.trtexec_child import run_quick
from gptuner_core.backends.tensorrt.trtexec_follow import follow_tune_run
from gptuner_core.backends.tensorrt.trtexec_follow import tune_run_argv
from gptuner_core.backends.tensorrt.trtexec_outputs import parse_exported_output
from gptuner_core.backends.tensorrt.trtexec_runner import TrtexecRunner
from gptuner_core.errors import BackendError
from gptuner_core.errors import BackendUnavailableError
from gptuner_core.errors import ConfigError
from gptuner_core.knobs import KnobDatabase


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.routes import Route


__all__ = [
    "TrtexecBackend",
    "TrtexecChildError",
    "TrtexecRunner",
    "follow_tune_run",
    "parse_exported_output",
    "probe_trtexec",
    "resolve_executable",
    "run_child",
    "tune_run_argv",
]

ROUTE_SOURCE = (
    "requested: trtexec never reads the route back (it logs the request before setBuildRoute "
    "and fails the build if TensorRT rejects it); the saved engine is the source of truth"
)


class TrtexecBackend(Backend):
    """TensorRT through a ``trtexec`` binary, one child process per candidate (argv lists only)."""

    name: ClassVar[str] = "trtexec"
    option_declarations: ClassVar[dict[str, tuple[str, Any]]] = dict(TRTEXEC_OPTIONS)

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.build_options = BuildOptions.from_options(self.options)
        self.extra_args = proto.check_extra_args(self.options.get("extra_args"))
        timeout = self.options.get("timeout_s", 0)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
            msg = f"trtexec option timeout_s must be a number >= 0, got {timeout!r}"
            raise ConfigError(msg)
        self._help = ""

    @classmethod
    def availability(cls) -> Availability:
        ok, reason, text = probe_trtexec(None)
        return Availability(available=ok, reason=reason, version=proto.version_from_banner(text))

    @property
    def executable(self) -> str:
        exe = resolve_executable(str(self.options.get("trtexec") or "") or None)
        if exe is None:
            ok, reason, _ = probe_trtexec(str(self.options.get("trtexec") or "") or None)
            raise BackendUnavailableError(reason)
        return exe

    # -- parent-side ------------------------------------------------------------------------
    def _help_route_json(self) -> str:
        exe = self.executable
        try:
            res = run_quick([exe, "--helpBuildRoute"], HELP_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            msg = f"'{exe} --helpBuildRoute' failed ({type(exc).__name__}: {exc})"
            raise BackendError(msg) from None
        out = (res.stdout or "") + (res.stderr or "")
        if res.returncode != 0:
            msg = f"'{exe} --helpBuildRoute' exited with status {res.returncode}: {out.strip()[-500:]}"
            raise BackendError(msg)
        self._help = out
        return proto.json_from_output(res.stdout or out)

    def describe(self, model: Path) -> KnobDatabase:
        ok, reason, text = probe_trtexec(str(self.options.get("trtexec") or "") or None)
        if not ok:
            raise BackendUnavailableError(reason)
        version = proto.version_from_banner(text)
        if version:
            db = knob_cache.knob_database(f"trtexec-{version}", self._help_route_json)
        else:
            db = knob_cache.parse_lenient(self._help_route_json(), source="trtexec --helpBuildRoute")
        return with_own_knobs(db)

    def input_specs(self, model: Path) -> list[TensorSpec]:
        return onnx_input_specs(model)

    def output_names(self, model: Path) -> list[str] | None:
        from gptuner_core.backends._base import onnx_output_names

        return onnx_output_names(model)

    def environment(self) -> dict[str, str]:
        from gptuner_core.backends.tensorrt.backend import gpu_environment

        ok, _, text = probe_trtexec(str(self.options.get("trtexec") or "") or None)
        env = {"backend_version": proto.version_from_banner(text) or "unknown", "runtime": "trtexec"}
        if ok:
            env["trtexec"] = self.executable
        env.update(gpu_environment())
        return env

    # -- child-side -------------------------------------------------------------------------
    def _flags(self, workdir: Path, profiles: dict[str, Any]) -> list[str]:
        if self.build_options.timing_cache == "shared":
            cache = shared_cache_path(workdir, self.build_options)
        else:
            cache = workdir / TIMING_CACHE_NAME
        layers = ["--profilingVerbosity=detailed", f"--exportLayerInfo={workdir / LAYERS_NAME}"]
        return proto.build_flags(self.options, profiles, cache) + layers + self.extra_args

    def build(
        self,
        model: Path,
        route: Route,
        workdir: Path,
        *,
        calibration: dict[str, np.ndarray] | None = None,
    ) -> BuildResult:
        trt_route, own = split_route(route, OWN_PREFIX)
        validate_route(trt_route, self.describe(model))
        workdir.mkdir(parents=True, exist_ok=True)
        precision = own.get(PRECISION, "fp32") or "fp32"
        onnx_path = apply_precision(model, precision, workdir, calibration)
        feed_shapes = {k: tuple(v.shape) for k, v in (calibration or {}).items()}
        profiles = resolve_profiles(onnx_input_specs(onnx_path), self.build_options.profiles, feed_shapes)
        engine = workdir / "engine.plan"
        result = workdir / "trtexec_result.json"
        log = workdir / "trtexec_build.log"
        result.unlink(missing_ok=True)  # trtexec deletes a stale result before each child
        argv = proto.child_argv(self.executable, onnx_path, str(trt_route), engine, result, self._flags(workdir, profiles))
        log_start = log.stat().st_size if log.exists() else 0
        t0 = time.perf_counter()
        rc, timed_out = run_child(argv, log, float(self.options.get("timeout_s") or 0))
        elapsed = time.perf_counter() - t0
        outcome = proto.classify(rc, result, timed_out_s=timed_out)
        summary = proto.parse_log(log.read_bytes()[log_start:].decode("utf-8", errors="replace"))
        if not outcome.ok:
            why = ""
            if summary.route_rejected is not None:
                why = f"; TensorRT rejected the route (IBuilderConfig::setBuildRoute failed for: {summary.route_rejected})"
            msg = f"trtexec child for route {str(route)!r}: {outcome.message}{why} (log: {log})"
            raise TrtexecChildError(msg, outcome)
        if not engine.is_file():
            msg = f"trtexec exited 0 but wrote no engine at {engine} (log: {log})"
            raise BackendError(msg)
        effective = " ".join(p for p in (str(trt_route), str(own)) if p)
        res = outcome.result
        assert res is not None
        engine_facts = self._layer_info(workdir / LAYERS_NAME)
        return BuildResult(
            artifact=engine,
            effective_route=effective,
            info={
                "engine_sha256": sha256_file(engine),
                "engine_bytes": engine.stat().st_size,
                "trtexec_gpu_time_ms": res.gpu_time_ms,
                "trtexec_accuracy_loss": res.accuracy_loss,
                "trtexec_accuracy_lines": [a.tensor for a in summary.accuracy],
                "trtexec_route_echo": summary.requested_route_echo,
                "effective_route_source": ROUTE_SOURCE,
                "log_path": str(log),
                "command": argv,
                "precision": precision,
                "profiles": {k: {"min": list(p.min), "opt": list(p.opt), "max": list(p.max)} for k, p in profiles.items()},
                "child_s": round(elapsed, 3),
                **engine_facts,
            },
        )

    @staticmethod
    def _layer_info(path: Path) -> dict[str, Any]:
        """The built engine's own description (``--exportLayerInfo``: the inspector's JSON)."""
        from gptuner_core.backends.tensorrt import inspector

        try:
            info = inspector.parse_engine_information(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"layers_error": f"trtexec wrote no --exportLayerInfo file {path}"}
        except BackendError as exc:
            return {"layers_error": str(exc)}
        return {"layers_path": str(path), "layers_summary": info.summary()}

    def load(self, build: BuildResult) -> Runner:
        return TrtexecRunner(self.executable, Path(build.artifact), self.options, self.extra_args)

    def repro(
        self, model: Path, route: Route, *, feed_shapes: dict[str, tuple[int, ...]] | None = None
    ) -> dict[str, str]:
        """Shell + Python reproduction; ``feed_shapes`` (the dataset's) fill dynamic inputs."""
        return repro_commands(model, route, self.options, feed_shapes=feed_shapes)
