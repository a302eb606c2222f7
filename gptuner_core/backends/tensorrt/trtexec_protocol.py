"""trtexec's parent/child protocol: argv, the result file, log lines, outcome classification.

Reference ``tensorrt-gpt.md`` §3.2 (trtexec 11.1 ``runTuningLoop``): the parent runs one child
``trtexec ... --setBuildRoute=<route> --saveEngine=<engine> --tuningResultFile=<json>`` per
route, deletes a stale result file first, waits, and classifies:

* killed by signal N          -> crashed, ``child killed by signal N (<NAME>)``;
* no result file              -> crashed, ``missing tuning result file <path> (child likely
  crashed before writing)`` (this also covers build failures);
* unparsable result file      -> crashed;
* valid result, non-zero exit -> not a crash, ``child exited with status N`` (e.g. an accuracy
  failure), excluded from the best engine;
* valid result, exit 0        -> success.

The result file is ``{"gpu_time_ms": <mean ms>, "accuracy_failed": <bool>, "accuracy_loss":
{<tensor>: <loss>}}``. Everything here is pure and unit-tested; argv are lists, never shell text.
"""

from __future__ import annotations

import json
import math
import re
import signal
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gptuner_core.backends.tensorrt.trtexec_log import AccuracyLine
from gptuner_core.backends.tensorrt.trtexec_log import LogSummary
from gptuner_core.backends.tensorrt.trtexec_log import TaskEvent
from gptuner_core.backends.tensorrt.trtexec_log import parse_log
from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError
from gptuner_core.records import CandidateState


__all__ = ["AccuracyLine", "ChildOutcome", "ChildResult", "LogSummary", "TaskEvent", "classify", "parse_log"]


#: Flags trtexec's parent strips from the child argv (sampleTuning.cpp ``isTuningOnlyArg``).
TUNING_ONLY_FLAGS: tuple[str, ...] = (
    "--tuneBuildRoutes",
    "--tuneBuildRouteFile",
    "--tuningSearch",
    "--tuningCacheFile",
    "--tuningTimeOut",
    "--saveAllEngines",
    "--continue",
    "--dryRun",
    "--setBuildRoute",
    "--saveEngine",
    "--tuningResultFile",
)
#: Flags gptuner sets itself for a candidate; user ``extra_args`` may not repeat them.
RESERVED_FLAGS: tuple[str, ...] = TUNING_ONLY_FLAGS + (
    "--onnx",
    "--loadEngine",
    "--memPoolSize",
    "--builderOptimizationLevel",
    "--timingCacheFile",
    "--noCudaGraph",
    "--noSpinWait",
    "--minShapes",
    "--optShapes",
    "--maxShapes",
    "--shapes",
    "--loadInputs",
    "--exportOutput",
    "--iterations",
    "--warmUp",
    "--duration",
    "--skipInference",
    "--profilingVerbosity",
    "--exportLayerInfo",
)


def flag_name(arg: str) -> str:
    return arg.split("=", 1)[0]


# -- result file ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class ChildResult:
    gpu_time_ms: float
    accuracy_failed: bool = False
    accuracy_loss: dict[str, float] = field(default_factory=dict)


def parse_result(text: str, source: str = "<result>") -> ChildResult:
    """Parse the ``--tuningResultFile`` JSON; :class:`BackendError` says what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"tuning result file {source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        raise BackendError(msg) from None
    except ValueError as exc:  # e.g. the 'nan' json.loads rejects in strict mode
        msg = f"tuning result file {source}: not valid JSON ({exc})"
        raise BackendError(msg) from None
    if not isinstance(data, dict):
        msg = f"tuning result file {source}: expected a JSON object (got {type(data).__name__})"
        raise BackendError(msg)
    gpu = data.get("gpu_time_ms", 0.0)  # trtexec: j.value("gpu_time_ms", 0.0)
    if isinstance(gpu, bool) or not isinstance(gpu, (int, float)):
        msg = f"tuning result file {source}: 'gpu_time_ms' must be a number (got {gpu!r})"
        raise BackendError(msg)
    failed = data.get("accuracy_failed", False)
    if not isinstance(failed, bool):
        msg = f"tuning result file {source}: 'accuracy_failed' must be true or false (got {failed!r})"
        raise BackendError(msg)
    loss_raw = data.get("accuracy_loss") or {}
    if not isinstance(loss_raw, dict) or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in loss_raw.values()
    ):
        msg = f"tuning result file {source}: 'accuracy_loss' must map tensor names to numbers (got {loss_raw!r})"
        raise BackendError(msg)
    return ChildResult(
        gpu_time_ms=float(gpu),
        accuracy_failed=failed,
        accuracy_loss={str(k): float(v) for k, v in loss_raw.items()},
    )


# -- classification ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class ChildOutcome:
    """How one child ended. ``crashed``/``message`` are exactly what trtexec's parent records."""

    state: CandidateState
    crashed: bool
    message: str
    returncode: int | None
    result: ChildResult | None = None

    @property
    def ok(self) -> bool:
        return self.state is CandidateState.COMPLETE


def signal_name(signum: int) -> str:
    """The name trtexec prints: ``strsignal(sig)`` ("Segmentation fault"), else ``SIGxxx``."""
    try:
        text = signal.strsignal(signum)
    except ValueError:
        text = None
    if text:
        return text
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def classify(returncode: int | None, result_path: Path, *, timed_out_s: float | None = None) -> ChildOutcome:
    """Classify a finished child as trtexec's parent does (``returncode < 0`` = killed by signal).

    ``timed_out_s`` marks a child that gptuner killed after that many seconds (trtexec itself has no
    per-iteration timeout).
    """
    if timed_out_s is not None:
        return ChildOutcome(
            state=CandidateState.TIMED_OUT,
            crashed=True,
            message=f"child exceeded {timed_out_s:g} s and was killed",
            returncode=returncode,
        )
    if returncode is not None and returncode < 0:
        n = -returncode
        return ChildOutcome(
            state=CandidateState.CRASHED,
            crashed=True,
            message=f"child killed by signal {n} ({signal_name(n)})",
            returncode=returncode,
        )
    try:
        text = result_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ChildOutcome(
            state=CandidateState.CRASHED,
            crashed=True,
            message=f"missing tuning result file {result_path} (child likely crashed before writing)",
            returncode=returncode,
        )
    except (OSError, UnicodeDecodeError) as exc:
        return ChildOutcome(
            state=CandidateState.CRASHED,
            crashed=True,
            message=f"unreadable tuning result file {result_path} ({exc})",
            returncode=returncode,
        )
    try:
        result = parse_result(text, str(result_path))
    except BackendError as exc:
        return ChildOutcome(
            state=CandidateState.CRASHED,
            crashed=True,
            message=f"failed to parse tuning result JSON: {exc.args[0] if exc.args else exc}",
            returncode=returncode,
        )
    if returncode:
        state = CandidateState.ACCURACY_FAILED if result.accuracy_failed else CandidateState.CRASHED
        return ChildOutcome(
            state=state,
            crashed=False,
            message=f"child exited with status {returncode}",
            returncode=returncode,
            result=result,
        )
    if result.accuracy_failed:
        return ChildOutcome(
            state=CandidateState.ACCURACY_FAILED,
            crashed=False,
            message="accuracy validation failed (child exited with status 0)",
            returncode=returncode,
            result=result,
        )
    if not math.isfinite(result.gpu_time_ms) or result.gpu_time_ms <= 0:
        return ChildOutcome(
            state=CandidateState.CRASHED,
            crashed=False,
            message=f"child reported no GPU time (gpu_time_ms={result.gpu_time_ms}); was inference skipped?",
            returncode=returncode,
            result=result,
        )
    return ChildOutcome(
        state=CandidateState.COMPLETE, crashed=False, message="", returncode=returncode, result=result
    )


# -- argv construction ------------------------------------------------------------------------
def _dims(shape: tuple[int, ...] | list[int]) -> str:
    return "x".join(str(int(d)) for d in shape)


def tensor_name_arg(name: str, flag: str) -> str:
    """A tensor name as trtexec's ``name:value`` lists read it (quoted when it has a ``:``).

    trtexec splits these lists on ``,`` *before* it looks at quotes (``splitToStringVec(list,
    ',')``, sampleOptions.cpp) and rejects more than two ``'`` per item, so a name with ``,`` or
    ``'`` cannot be passed at all: :class:`ConfigError` says so instead of building the wrong thing.
    """
    bad = [c for c in ",'" if c in name]
    if bad:
        msg = (
            f"tensor name {name!r} contains {' and '.join(repr(c) for c in bad)}: trtexec splits {flag} "
            "on ',' before reading quotes and allows no other quote, so it cannot name this tensor "
            "(rename the model's input/output, or use the 'tensorrt' backend)"
        )
        raise ConfigError(msg)
    return f"'{name}'" if ":" in name else name


def shapes_arg(flag: str, shapes: dict[str, tuple[int, ...]]) -> str:
    """``--optShapes=x:1x3x224x224,y:1x8`` (names quoted when they contain ``:``)."""
    parts = [f"{tensor_name_arg(name, flag)}:{_dims(shape)}" for name, shape in shapes.items()]
    return f"{flag}={','.join(parts)}"


def check_extra_args(extra: Any) -> list[str]:
    """User-supplied extra flags: a list of ``--flag[=value]`` strings not managed by gptuner."""
    if extra is None:
        return []
    if not isinstance(extra, (list, tuple)) or not all(isinstance(a, str) for a in extra):
        msg = f"trtexec option extra_args must be a list of strings like ['--useSpinWait'], got {extra!r}"
        raise ConfigError(msg)
    bad = [a for a in extra if flag_name(a) in RESERVED_FLAGS]
    if bad:
        msg = f"trtexec option extra_args may not set {bad}: gptuner sets these flags itself"
        raise ConfigError(msg)
    notflag = [a for a in extra if not a.startswith("-")]
    if notflag:
        msg = f"trtexec option extra_args entries must be flags starting with '-', got {notflag}"
        raise ConfigError(msg)
    return list(extra)


def build_flags(options: dict[str, Any], profiles: dict[str, Any], timing_cache_file: Path | None) -> list[str]:
    """trtexec flags for the backend options shared by the build and the runner."""
    flags: list[str] = []
    ws = int(options.get("workspace_mb", 0) or 0)
    if ws:
        flags.append(f"--memPoolSize=workspace:{ws}M")
    flags.append(f"--builderOptimizationLevel={int(options.get('opt_level', 3))}")
    if timing_cache_file is not None:
        flags.append(f"--timingCacheFile={timing_cache_file}")
    if profiles:
        flags.append(shapes_arg("--minShapes", {k: p.min for k, p in profiles.items()}))
        flags.append(shapes_arg("--optShapes", {k: p.opt for k, p in profiles.items()}))
        flags.append(shapes_arg("--maxShapes", {k: p.max for k, p in profiles.items()}))
    flags += run_flags(options)
    return flags


def run_flags(options: dict[str, Any]) -> list[str]:
    flags = []
    if not options.get("cuda_graph", True):
        flags.append("--noCudaGraph")
    if not options.get("spin_wait", True):
        flags.append("--noSpinWait")
    return flags


def child_argv(
    trtexec: str,
    model: Path,
    route: str,
    engine_path: Path,
    result_path: Path | None,
    flags: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """The argv of one candidate child, as trtexec's own parent builds it (argv list, no shell)."""
    argv = [str(trtexec), f"--onnx={model}", *flags, f"--setBuildRoute={route}", f"--saveEngine={engine_path}"]
    if result_path is not None:
        argv.append(f"--tuningResultFile={result_path}")
    return argv


def json_from_output(text: str) -> str:
    """The JSON object in ``--helpBuildRoute`` output (log banners may surround it)."""
    start = text.find("{")
    end = text.rfind("}")
    if start < 0 or end <= start:
        msg = "trtexec --helpBuildRoute printed no JSON object (expected the all_build_routes knob database)"
        raise BackendError(msg)
    return text[start : end + 1]


_BANNER = re.compile(r"TensorRT v(\d+)")


def version_from_banner(text: str) -> str:
    """``&&&& RUNNING TensorRT.trtexec [TensorRT v110100]`` -> ``"11.1.0"`` (``""`` if absent)."""
    m = _BANNER.search(text)
    if not m:
        return ""
    digits = m.group(1)
    if len(digits) >= 5:
        n = int(digits)
        return f"{n // 10000}.{(n // 100) % 100}.{n % 100}"
    return digits
