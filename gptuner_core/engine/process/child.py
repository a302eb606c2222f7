"""What runs inside a candidate's child process (see ``isolation``).

``run_candidate`` builds a route, stops early when the artifact is a duplicate of an earlier one,
runs the study's inputs for the accuracy gate (``outputs.npz``), evaluates the task metric and
measures latency. Building ahead splits that in two processes: ``build_only`` (build, hash,
duplicate check) and ``run_candidate`` with ``ChildJob.artifact`` set (everything after the build).
With overlap on (``ChildJob.turn``) ``run_candidate`` builds, waits for its device turn
(``engine.process.turn``) and measures in the same process: nothing is compiled twice.
``remeasure`` loads an existing artifact in a fresh process and measures it again (interleaved
re-validation, drift sentinel, racing); its result's ``sha256`` is the identity of what it ran
(``Runner.identity``, else the artifact's bytes), which a round checks against the screened build. Both take a :class:`ChildJob` and return a
:class:`ChildResult` (as JSON, through ``isolation``); the parent classifies.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gptuner_core.backends import load_backend
from gptuner_core.engine.files import artifacts
from gptuner_core.engine.process import turn
from gptuner_core.fingerprint import file_sha256
from gptuner_core.records import CandidateState
from gptuner_core.records import ChildJob
from gptuner_core.records import ChildResult
from gptuner_core.records import LatencyStats


def artifact_key(sha256: str, info: dict[str, Any]) -> str:
    """Identity for duplicate detection: artifact bytes plus any runtime configuration that
    is applied at load time and so is not in the bytes (e.g. ONNX Runtime session options)."""
    runtime = info.get("runtime_config")
    if not runtime:
        return sha256
    blob = json.dumps(runtime, sort_keys=True).encode()
    return hashlib.sha256(sha256.encode() + b"\0" + blob).hexdigest()


def _npz(path: str | None) -> dict[str, np.ndarray] | None:
    if not path:
        return None
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def sampling_settings(job: ChildJob) -> Any:
    """The job's ``SamplingSettings``, scaled by its ``measure_scale`` (a round's quarter)."""
    from gptuner_core.measurement import SamplingSettings

    settings = SamplingSettings(**job.measurement)
    return settings.scaled(job.measure_scale) if job.measure_scale != 1.0 else settings


def first_batch(job: ChildJob, inputs: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The first ``batch_size`` rows of ``inputs`` (the job's input file when not given): what
    the samples, a round's warm-up and the profile run."""
    from gptuner_core.batching import take

    return take((_npz(job.inputs) or {}) if inputs is None else inputs, job.batch_axes,
                slice(0, int(job.batch_size)))


def _measure(runner: Any, job: ChildJob) -> dict[str, Any]:
    from gptuner_core.measurement import measure

    settings = sampling_settings(job)
    if job.measure_feeds:  # each given shape in turn, in this one process (same order for all)
        return _measure_shapes(runner, job, settings)
    runner.prepare(first_batch(job))
    t0 = time.perf_counter()
    result = measure(runner.time_calls, settings, telemetry=runner.telemetry)
    return {
        "latency": LatencyStats.from_json(result.stats.to_json()),
        "samples_ms": tuple(float(s) for s in result.samples_ms),
        "telemetry": result.telemetry,
        "measure_time_s": time.perf_counter() - t0,
    }


def _measure_shapes(runner: Any, job: ChildJob, settings: Any) -> dict[str, Any]:
    """Latency at every ``--measure-shapes`` profile; the first is also the record's own
    latency (the tables' column), all of them in ``shapes``."""
    from gptuner_core.measurement import measure
    from gptuner_core.records import ShapeLatency

    t0 = time.perf_counter()
    shapes, first = [], None
    for label, path in zip(job.measure_labels, job.measure_feeds, strict=True):
        runner.prepare(_npz(path) or {})
        result = measure(runner.time_calls, settings, telemetry=runner.telemetry)
        first = first or result
        shapes.append(ShapeLatency(label=label, latency=LatencyStats.from_json(result.stats.to_json()),
                                   samples_ms=tuple(float(s) for s in result.samples_ms)))
    return {
        "latency": shapes[0].latency, "samples_ms": shapes[0].samples_ms,
        "telemetry": first.telemetry, "measure_time_s": time.perf_counter() - t0,
        "shapes": tuple(shapes),
    }


def _task_metric(job: ChildJob, outputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """The user's task metric, evaluated here in the candidate's own process: a metric that
    hangs meets the measurement timeout, one that exits or crashes ends only this child, one
    that raises becomes this candidate's accuracy failure. Imported once per process."""
    if not job.task_metric:
        return {}
    from gptuner_core.accuracy import task_metric_result
    from gptuner_core.errors import DatasetError
    from gptuner_core.errors import GptunerError

    labels = np.load(job.labels, allow_pickle=False) if job.labels else None
    try:
        if job.golden and not Path(job.golden).exists():
            msg = f"the default route's outputs are missing ({job.golden}): the task metric has no reference"
            raise DatasetError(msg)
        golden = _npz(job.golden)  # a metric that takes golden outputs gets them
        res = task_metric_result(job.task_metric, outputs, labels, output_name=job.task_output,
                                 golden=golden if golden is not None else outputs)
        return {"task_metric": res.value, "task_details": dict(res.details)}
    except GptunerError as exc:
        return {"task_error": str(exc)}


#: the line of a candidate's log that gives the seconds of its device turn's steps
STEPS = "gptuner device steps "


class _Steps:
    """Seconds of each step of a candidate's device turn, written to its log as one line
    (:data:`STEPS` and JSON: where the turn's untimed time goes)."""

    def __init__(self) -> None:
        self.t = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self.t, 3)
        self.t = now

    def log(self) -> None:
        import sys

        print(STEPS + json.dumps(self.seconds), file=sys.stderr, flush=True)


def build_route(backend: Any, job: ChildJob, out: Path) -> Any:
    """``backend.build`` of the job's route into ``out`` (a ``BuildResult``); a backend that
    compiles for static shapes builds for the study's batch (``Backend.compiles_for_batch``)."""
    from gptuner_core.routes import Route

    batch = {"batch_size": int(job.batch_size)} if getattr(backend, "compiles_for_batch", False) else {}
    return backend.build(Path(job.model), Route.parse(job.route), out, calibration=_npz(job.calibration), **batch)


def _build(job: ChildJob, backend: Any, workdir: Path, phase: Callable[[str], None]) -> tuple[Any, ChildResult]:
    """Build, hash and identify the artifact (DUPLICATE when its key is already known)."""
    phase("build")
    t0 = time.perf_counter()
    build = build_route(backend, job, workdir / "artifact")
    build_time = time.perf_counter() - t0
    sha = file_sha256(build.artifact)
    size = (
        sum(f.stat().st_size for f in build.artifact.rglob("*") if f.is_file())
        if build.artifact.is_dir()
        else build.artifact.stat().st_size
    )
    identity = backend.artifact_identity(build)  # a canonical form where bytes can differ
    key = artifact_key(identity or sha, build.info)
    built = ChildResult(
        state=CandidateState.COMPLETE, effective_route=build.effective_route, info=build.info,
        artifact=str(build.artifact), sha256=sha, artifact_key=key, size=size,
        build_time_s=build_time,
    )
    if key in job.known_artifacts:
        built = built.replace(state=CandidateState.DUPLICATE, duplicate_of=job.known_artifacts[key])
    return build, built


def build_only(job_json: dict[str, Any], workdir: Path, phase: Callable[[str], None]) -> dict[str, Any]:
    """The build half of a candidate (build ahead): build, hash, write the artifact; no device
    measurement. ``run_candidate`` with ``ChildJob.artifact`` set is the other half."""
    job = ChildJob.from_json(job_json)
    backend = load_backend(job.backend, job.backend_options)
    if job.turn:
        turn.pin(job.turn.get("build_cpus"))
    return _build(job, backend, workdir, phase)[1].to_json()


def run_candidate(job_json: dict[str, Any], workdir: Path, phase: Callable[[str], None]) -> dict[str, Any]:
    """Build (unless ``job.artifact`` names one built by :func:`build_only`), then outputs,
    task metric, measurement and profile."""
    from gptuner_core.backends import BuildResult

    job = ChildJob.from_json(job_json)
    backend = load_backend(job.backend, job.backend_options)
    grant: dict[str, Any] = {}  # overlap: the parent's grant of the device (``turn``)
    if job.artifact:
        build = BuildResult(
            artifact=Path(job.artifact), effective_route=job.effective_route or job.route,
            info=job.info,
        )
        built = ChildResult(state=CandidateState.COMPLETE, effective_route=build.effective_route,
                            info=build.info, artifact=job.artifact)
    else:
        if job.turn:
            turn.pin(job.turn.get("build_cpus"))
        build, built = _build(job, backend, workdir, phase)
        if built.state is CandidateState.DUPLICATE:
            return built.to_json()
        if job.turn:  # overlap: measure what was built here, once the device is ours
            from gptuner_core.engine.process.isolation import write_json_atomic

            write_json_atomic(workdir / turn.BUILT, built.to_json(), durable=False)
            grant = turn.wait_turn(workdir, phase)
    phase(turn.WARMUP if grant.get("warmup") else "measure")  # warmup: the device shared
    from gptuner_core.batching import iter_batches
    from gptuner_core.batching import rows_of
    from gptuner_core.batching import stack_outputs

    steps = _Steps()
    with backend.load(build) as runner:
        inputs = _npz(job.inputs) or {}
        feeds = list(iter_batches(inputs, int(job.batch_size), job.batch_axes))
        steps("load")
        outs = [runner.infer(feed) for feed in feeds]
        steps("outputs")
        if grant.get("warmup"):  # the first calls are done: the device alone for the samples
            turn.wait_turn(workdir, phase, waiting=turn.READY, name=turn.TURN_ALONE)
            phase("measure")
            steps("ready")
        measured = _measure(runner, job)
        steps("samples")
        capture = None
        if job.profile_runs > 0:  # after the samples, in a separate session: they stay as measured
            from gptuner_core.profiles import record_profile

            phase("profile")
            capture = record_profile(job.backend, build, runner, first_batch(job, inputs), workdir, model=job.model,
                                     runs=job.profile_runs)
            steps("profile")
        steps.log()
        if job.turn:  # the rest is CPU work: the next candidate may measure meanwhile
            turn.leave_device(job.turn, phase)
        outputs = stack_outputs(outs, [rows_of(f, job.batch_axes) for f in feeds])
        np.savez_compressed(workdir / "outputs.npz", **outputs)  # read once by the gate
        task = _task_metric(job, outputs)
        profile: dict[str, Any] = {}
        if capture is not None:
            out = capture.finish()
            profile = {"path": str(out.path) if out.path else None, "error": out.error,
                       "seconds": out.seconds}
            for graph in (workdir / "profile").glob("*.onnx"):  # the profiler's copy of the
                graph.unlink(missing_ok=True)  # model graph, read once into profile.json
    return built.replace(**measured, **task, profile=profile).to_json()


def remeasure(job_json: dict[str, Any], workdir: Path, phase: Callable[[str], None]) -> dict[str, Any]:
    job = ChildJob.from_json(job_json)
    backend = load_backend(job.backend, job.backend_options)
    assert job.artifact is not None, "a re-measurement job names the artifact to measure"
    # overlap: on the measuring cores (builds may run on the others), or a round started ahead:
    # load on the build cores
    if job.turn:
        turn.pin(job.turn.get("build_cpus") if job.turn.get("wait") else job.turn.get("cpus"))
        if job.turn.get("wait"):  # below the builds and the earlier rounds (round_prefetch)
            turn.lower_priority(int(job.turn.get("nice", 0)))
    phase("build")
    if getattr(backend, "reload_by_rebuilding", False):
        build = build_route(backend, job, workdir / "artifact")
    else:
        build = ensure_built(job, backend)
    ahead = bool(job.turn.get("wait"))  # a round's process started ahead of its turn
    if ahead:
        turn.exit_when_cancelled(workdir)
    # torch: the route compiled again from the warm Inductor cache (ahead: without running it)
    loaded = backend.load_ahead(build) if ahead else backend.load(build)
    identity = loaded.identity or file_sha256(build.artifact)  # what runs: checked by the round
    with loaded as runner:
        if ahead:  # measure when it is our turn
            grant = turn.wait_turn(workdir, phase)
            turn.restore_priority()
            if grant.get("warmup"):  # first the calls before the samples, beside the round's others
                phase(turn.WARMUP)
                _first_calls(runner, job)
                turn.wait_turn(workdir, phase, waiting=turn.READY, name=turn.TURN_ALONE)
        phase("measure")
        return ChildResult(state=CandidateState.COMPLETE, sha256=identity,
                           **_measure(runner, job)).to_json()


#: calls a round's process makes in its warm-up: torch's CUDA graph trees run a function once,
#: record it on the next call and replay it from the third
FIRST_CALLS = 3


def _first_calls(runner: Any, job: ChildJob) -> None:
    """The calls that set a process up before its samples, untimed (a round's warm-up: lazy
    module loading, cuDNN's and cuBLAS's set-up, CUDA graphs recorded); :func:`_measure`
    prepares again and warms up for its own ``warmup_s`` before it samples."""
    runner.prepare(first_batch(job))
    runner.time_calls(FIRST_CALLS - 1)


def ensure_built(job: ChildJob, backend: Any) -> Any:
    """The recorded build of ``job.artifact`` (a ``BuildResult``), rebuilt from ``job.route``
    first when ``--keep-artifacts`` pruned it (``engine.files.artifacts``)."""
    from gptuner_core.backends import BuildResult

    build = BuildResult(artifact=Path(str(job.artifact)), effective_route=job.effective_route or job.route,
                        info=job.info)
    if artifacts.needs_rebuild(job.artifact, job.info):
        build = _rebuild_in_place(job, backend, build)
    return build


def _rebuild_in_place(job: ChildJob, backend: Any, build: Any) -> Any:
    """A pruned candidate's artifact, rebuilt from its route into its own folder (once: later
    re-measurements find it there; a rebuild cut short is redone)."""
    folder = artifacts.candidate_dir_of(job.artifact)
    assert folder is not None, "only artifacts inside a candidate folder are pruned"
    with artifacts.rebuilding(folder, lambda: artifacts.needs_rebuild(job.artifact, job.info)) as needed:
        if not needed:
            return build
        print(f"[gptuner] rebuilding pruned artifact of {folder.name} from route {job.route!r}", flush=True)
        return build_route(backend, job, folder / "artifact")
