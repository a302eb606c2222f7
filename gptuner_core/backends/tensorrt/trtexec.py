"""Drive a ``trtexec`` binary: one child per candidate, and following a plain tuning run.

* :func:`probe_trtexec`: the binary exists and ``trtexec --help`` mentions ``--tuneBuildRoutes``
  (the Cookbook's probe; pip wheels ship no trtexec).
* :class:`TrtexecBackend`: ``build`` runs ``trtexec --onnx=… --setBuildRoute=… --saveEngine=…
  --tuningResultFile=…`` (an argv list) and classifies the child exactly like trtexec's own parent
  (:mod:`trtexec_protocol`). ``load`` returns :class:`TrtexecRunner`, which times and runs the
  saved engine with further ``trtexec --loadEngine`` children.
* :func:`follow_tune_run`: launch ``trtexec --tuneBuildRoutes=…`` and yield its tuning-cache rows
  while the file grows (read with :mod:`gptuner_core.interop.trtexec_cache`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from collections.abc import Iterator
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
from gptuner_core.errors import BackendError
from gptuner_core.errors import BackendUnavailableError
from gptuner_core.errors import ConfigError
from gptuner_core.knobs import KnobDatabase
from gptuner_core.records import CandidateState


if TYPE_CHECKING:
    import numpy as np

    from gptuner_core.routes import Route
    from gptuner_core.interop.trtexec_cache import CacheHeader
    from gptuner_core.interop.trtexec_cache import CacheRow


HELP_TIMEOUT_S = 60


class TrtexecChildError(BackendError):
    """A trtexec child did not succeed; ``outcome`` holds trtexec's own classification."""

    def __init__(self, msg: str, outcome: proto.ChildOutcome) -> None:
        super().__init__(msg)
        self.outcome = outcome


def resolve_executable(name: str | None = None) -> str | None:
    """Absolute path of the trtexec to use: ``name``, else ``$GPTUNER_TRTEXEC``, else PATH."""
    candidate = name or os.environ.get("GPTUNER_TRTEXEC") or "trtexec"
    if os.sep in candidate:
        return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    return shutil.which(candidate)


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
    )


def probe_trtexec(name: str | None = None) -> tuple[bool, str, str]:
    """``(ok, reason, help_text)``; ``reason`` is precise when not ok. Never raises."""
    exe = resolve_executable(name)
    if exe is None:
        wanted = name or os.environ.get("GPTUNER_TRTEXEC") or "trtexec"
        return False, f"no executable trtexec found (looked for {wanted!r} on PATH); install TensorRT's samples/bin or set the trtexec option", ""
    try:
        res = _run([exe, "--help"], HELP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"'{exe} --help' failed ({type(exc).__name__}: {exc})", ""
    text = (res.stdout or "") + (res.stderr or "")
    if "--tuneBuildRoutes" not in text:
        return False, f"'{exe}' has no --tuneBuildRoutes in its --help (expected trtexec from TensorRT >= 11.1 on Linux)", text
    return True, "", text


def run_child(argv: list[str], log_path: Path, timeout_s: float = 0) -> tuple[int | None, float | None]:
    """Run one child with stdout+stderr to ``log_path``; ``(returncode, timed_out_after_s)``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = proc.wait(timeout=timeout_s if timeout_s and timeout_s > 0 else None)
            return rc, None
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            return rc, float(timeout_s)


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
            res = _run([exe, "--helpBuildRoute"], HELP_TIMEOUT_S)
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
            db = KnobDatabase.from_string(self._help_route_json(), source="trtexec --helpBuildRoute")
        return with_own_knobs(db)

    def input_specs(self, model: Path) -> list[TensorSpec]:
        return onnx_input_specs(model)

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
        return proto.build_flags(self.options, profiles, cache) + self.extra_args

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
        t0 = time.perf_counter()
        rc, timed_out = run_child(argv, log, float(self.options.get("timeout_s") or 0))
        elapsed = time.perf_counter() - t0
        outcome = proto.classify(rc, result, timed_out_s=timed_out)
        summary = proto.parse_log(log.read_text(encoding="utf-8", errors="replace"))
        if not outcome.ok:
            msg = f"trtexec child for route {str(route)!r}: {outcome.message} (log: {log})"
            raise TrtexecChildError(msg, outcome)
        if not engine.is_file():
            msg = f"trtexec exited 0 but wrote no engine at {engine} (log: {log})"
            raise BackendError(msg)
        applied = summary.applied_route if summary.applied_route is not None else str(trt_route)
        effective = " ".join(p for p in (applied, str(own)) if p)
        res = outcome.result
        assert res is not None
        return BuildResult(
            artifact=engine,
            effective_route=effective,
            info={
                "engine_sha256": sha256_file(engine),
                "engine_bytes": engine.stat().st_size,
                "trtexec_gpu_time_ms": res.gpu_time_ms,
                "trtexec_accuracy_loss": res.accuracy_loss,
                "trtexec_accuracy_lines": [a.tensor for a in summary.accuracy],
                "log_path": str(log),
                "command": argv,
                "precision": precision,
                "profiles": {k: {"min": list(p.min), "opt": list(p.opt), "max": list(p.max)} for k, p in profiles.items()},
                "child_s": round(elapsed, 3),
            },
        )

    def load(self, build: BuildResult) -> Runner:
        return TrtexecRunner(self.executable, Path(build.artifact), self.options, self.extra_args)

    def repro(self, model: Path, route: Route) -> dict[str, str]:
        return repro_commands(model, route, self.options)


# -- running a saved engine through trtexec ----------------------------------------------------
def parse_exported_output(text: str, source: str = "<output>") -> dict[str, Any]:
    """``--exportOutput`` JSON: ``[{"name", "dimensions": "1x10", "values": [...]}]`` -> arrays."""
    import numpy as np

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"trtexec output file {source}: not valid JSON ({exc.msg} at line {exc.lineno})"
        raise BackendError(msg) from None
    if not isinstance(data, list):
        msg = f"trtexec output file {source}: expected a list of tensors (got {type(data).__name__})"
        raise BackendError(msg)
    out = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not {"name", "dimensions", "values"} <= set(item):
            msg = f"trtexec output file {source}: entry {i} needs name, dimensions and values (got {item!r:.120})"
            raise BackendError(msg)
        dims_text = str(item["dimensions"]).strip()
        dims = tuple(int(d) for d in dims_text.split("x")) if dims_text else ()
        arr = np.asarray(item["values"], dtype=np.float32)
        if arr.size != int(np.prod(dims, dtype=np.int64)):
            msg = f"trtexec output file {source}: tensor '{item['name']}' has {arr.size} values for dimensions {dims_text}"
            raise BackendError(msg)
        out[str(item["name"])] = arr.reshape(dims)
    return out


class TrtexecRunner(Runner):
    """Runs a saved engine with ``trtexec --loadEngine``; each call is one trtexec child.

    ``time_calls(n)`` reads ``gpu_time_ms`` (trtexec's mean GPU compute time) from the result file
    of a run with ``--iterations=n --warmUp=0 --duration=0`` and returns ``n * mean`` in ns; each
    sample pays a process start and an engine load, so prefer the ``tensorrt`` backend for fine
    measurements.
    """

    def __init__(self, exe: str, engine: Path, options: dict[str, Any], extra_args: list[str]) -> None:
        self.exe = exe
        self.engine = engine
        self.options = options
        self.extra_args = extra_args
        self.workdir = engine.parent / "trtexec_run"
        self._input_flags: list[str] = []

    def prepare(self, feeds: dict[str, Any]) -> None:
        import numpy as np

        self.workdir.mkdir(parents=True, exist_ok=True)
        loads, shapes = [], {}
        for i, (name, value) in enumerate(sorted(feeds.items())):
            arr = np.ascontiguousarray(value)
            path = self.workdir / f"input{i}.bin"
            path.write_bytes(arr.tobytes())
            shown = f"'{name}'" if any(c in name for c in ":,") else name
            loads.append(f"{shown}:{path}")
            shapes[name] = tuple(arr.shape)
        self._input_flags = [f"--loadInputs={','.join(loads)}"] if loads else []
        if shapes:
            self._input_flags.append(proto.shapes_arg("--shapes", shapes))

    def _argv(self, iterations: int, extra: list[str]) -> list[str]:
        return [
            self.exe,
            f"--loadEngine={self.engine}",
            *self._input_flags,
            f"--iterations={iterations}",
            "--warmUp=0",
            "--duration=0",
            *proto.run_flags(self.options),
            *self.extra_args,
            *extra,
        ]

    def _child(self, argv: list[str], result: Path | None) -> proto.ChildOutcome:
        if result is not None:
            result.unlink(missing_ok=True)
        rc, timed_out = run_child(argv, self.workdir / "trtexec_run.log", float(self.options.get("timeout_s") or 0))
        if result is None:
            if timed_out is not None or rc:
                msg = f"trtexec run failed: {'timeout' if timed_out else f'status {rc}'} (log: {self.workdir / 'trtexec_run.log'})"
                raise BackendError(msg)
            return proto.ChildOutcome(state=CandidateState.COMPLETE, crashed=False, message="", returncode=rc)
        outcome = proto.classify(rc, result, timed_out_s=timed_out)
        if not outcome.ok:
            msg = f"trtexec run of {self.engine}: {outcome.message} (log: {self.workdir / 'trtexec_run.log'})"
            raise TrtexecChildError(msg, outcome)
        return outcome

    def time_calls(self, n: int) -> int:
        if n < 1:
            msg = f"time_calls(n) needs n >= 1, got {n}"
            raise BackendError(msg)
        result = self.workdir / "timing_result.json"
        outcome = self._child(self._argv(n, [f"--tuningResultFile={result}"]), result)
        assert outcome.result is not None
        return int(round(outcome.result.gpu_time_ms * n * 1e6))

    def infer(self, feeds: dict[str, Any]) -> dict[str, Any]:
        self.prepare(feeds)
        out = self.workdir / "outputs.json"
        out.unlink(missing_ok=True)
        self._child(self._argv(1, [f"--exportOutput={out}"]), None)
        try:
            text = out.read_text(encoding="utf-8")
        except FileNotFoundError:
            msg = f"trtexec wrote no output file {out} (log: {self.workdir / 'trtexec_run.log'})"
            raise BackendError(msg) from None
        return parse_exported_output(text, str(out))


# -- following a plain tuning run -------------------------------------------------------------
def tune_run_argv(argv: list[str], cache_path: Path) -> list[str]:
    """Check a ``trtexec --tuneBuildRoutes`` argv list and pin ``--tuningCacheFile``."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        msg = f"follow_tune_run needs an argv list of strings (never a shell string), got {argv!r:.200}"
        raise ConfigError(msg)
    names = [proto.flag_name(a) for a in argv[1:]]
    if not {"--tuneBuildRoutes", "--tuneBuildRouteFile", "--continue"} & set(names):
        msg = "follow_tune_run: argv has no --tuneBuildRoutes, --tuneBuildRouteFile or --continue (expected a trtexec tuning run)"
        raise ConfigError(msg)
    out = list(argv)
    for i, arg in enumerate(out):
        if proto.flag_name(arg) == "--tuningCacheFile":
            given = arg.partition("=")[2]
            if Path(given).resolve() != Path(cache_path).resolve():
                msg = f"follow_tune_run: argv writes the cache to {given!r} but cache_path is {str(cache_path)!r}"
                raise ConfigError(msg)
            out[i] = f"--tuningCacheFile={cache_path}"
            return out
    out.append(f"--tuningCacheFile={cache_path}")
    return out


def follow_tune_run(
    argv: list[str],
    cache_path: str | Path,
    *,
    poll_s: float = 0.5,
    log_path: str | Path | None = None,
    on_header: Callable[[CacheHeader], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Iterator[CacheRow]:
    """Launch a trtexec tuning run and yield each cache row once, as the file grows.

    A fresh run (no ``--continue``) starts from a removed cache file, so stale rows are never
    reported. The generator ends when trtexec has exited and its last row was read; a non-zero
    exit then raises :class:`BackendError` (after every row was yielded). ``stop()`` returning true
    terminates the run early.
    """
    from gptuner_core.errors import TuningCacheError
    from gptuner_core.interop.trtexec_cache import parse_tuning_cache

    cache = Path(cache_path)
    full = tune_run_argv(argv, cache)
    if "--continue" not in [proto.flag_name(a) for a in full]:
        cache.unlink(missing_ok=True)
    log = Path(log_path) if log_path else cache.with_name(cache.name + ".log")
    seen = 0
    header_sent = False
    with open(log, "ab") as log_file:
        proc = subprocess.Popen(full, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            while True:
                finished = proc.poll() is not None
                try:
                    text = cache.read_bytes().decode("utf-8", errors="replace")
                except FileNotFoundError:
                    text = ""
                if text.strip():
                    try:
                        parsed = parse_tuning_cache(text, source=f"'{cache}'")
                    except TuningCacheError:
                        if finished:
                            raise
                        parsed = None  # header still being written
                    if parsed is not None:
                        if not header_sent and on_header is not None:
                            on_header(parsed.header)
                        header_sent = True
                        yield from parsed.rows[seen:]
                        seen = len(parsed.rows)
                if finished:
                    break
                if stop is not None and stop():
                    proc.terminate()
                    proc.wait()
                    return
                time.sleep(poll_s)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    rc = proc.returncode
    if rc:
        how = f"was killed by signal {-rc} ({proto.signal_name(-rc)})" if rc < 0 else f"exited with status {rc}"
        msg = f"trtexec tuning run {how} (log: {log})"
        raise BackendError(msg)
