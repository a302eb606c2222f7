"""The evaluator seam: turn a proposal into a finished candidate record, and re-measure one.

:class:`IsolatedEvaluator` builds and measures each route in a fresh process (``isolation``),
applies the accuracy gate and the speed-up; :class:`gptuner_core.engine.evaluate.recorded.RecordedEvaluator`
answers from a recording. The loop (``engine.loop.loop``) drives either one the same way.
"""

from __future__ import annotations

import json
import shutil
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.engine.decide import verdict
from gptuner_core.engine.evaluate.protocol import Evaluator
from gptuner_core.engine.evaluate.protocol import StudyContext
from gptuner_core.engine.files.workspace import load_npz
from gptuner_core.engine.files.workspace import save_npz_atomic
from gptuner_core.engine.files.workspace import write_atomic
from gptuner_core.engine.process.isolation import run_isolated
from gptuner_core.errors import GptunerError
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import ChildJob
from gptuner_core.records import ChildResult
from gptuner_core.records import state_of_status


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Sequence

    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.evaluate.round_prefetch import RoundCall
    from gptuner_core.engine.evaluate.round_prefetch import RoundPrefetch
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.engine.scale.device_gate import DeviceGate
    from gptuner_core.strategies import Proposal

BUILD_TARGET = "gptuner_core.engine.process.child:run_candidate"
BUILD_ONLY_TARGET = "gptuner_core.engine.process.child:build_only"
REMEASURE_TARGET = "gptuner_core.engine.process.child:remeasure"


def make_evaluator(ctx: StudyContext) -> Evaluator:
    """What answers a study's proposals: its recording for the ``replay`` backend (nothing is
    built), else real builds in isolated processes."""
    if ctx.config.backend == "replay":  # the backend's recording: resolved and read once
        from gptuner_core.backends import load_backend
        from gptuner_core.engine.evaluate.recorded import RecordedEvaluator

        backend = load_backend(ctx.config.backend, ctx.config.backend_options)
        return RecordedEvaluator(backend.recording(Path(ctx.config.model)))  # type: ignore[attr-defined]
    return IsolatedEvaluator(ctx)


def study_evaluator(workspace: StudyWorkspace, config: StudyConfig) -> IsolatedEvaluator:
    """An evaluator over an existing study: its stored inputs, verified by their recorded hash
    (re-measuring candidates outside the tuner: ``gptuner revalidate``, benchmarks)."""
    from gptuner_core.backends import load_backend
    from gptuner_core.engine.files.inputs import open_inputs
    from gptuner_core.storage import open_store

    with open_store(workspace.root, readonly=True) as store:
        sha, axes = store.get_meta("inputs_sha256"), store.get_meta("batch_axes")
    specs = load_backend(config.backend, config.backend_options).input_specs(Path(config.model))
    inputs = open_inputs(workspace, config, specs, sha, axes)
    return IsolatedEvaluator(StudyContext(config=config, workspace=workspace, inputs=inputs))


class IsolatedEvaluator:
    """Real builds and measurements, each in a fresh isolated process."""

    def __init__(self, ctx: StudyContext, *, artifact_roots: tuple[Path, ...] = ()) -> None:
        self.ctx = ctx
        #: folders besides the study's own whose artifacts may be re-measured: the regression
        #: gate's verified bundle and the artifact given on its command line, never a stored path
        self.artifact_roots = artifact_roots
        self._turn: dict[str, Any] | None = None  # the measuring cores' turn, once known
        self._prefetch: RoundPrefetch | None = None  # re-validation rounds started together
        self._loads: Callable[[str], str] | None = None  # where a route's round processes load

    # -- jobs ------------------------------------------------------------------------------
    def job(self, route: str, **changes: Any) -> ChildJob:
        cfg, inputs, ws = self.ctx.config, self.ctx.inputs, self.ctx.workspace
        model = cfg.model
        if ":" not in model or Path(model).exists():
            model = str(Path(model).resolve())
        job = ChildJob(
            backend=cfg.backend, backend_options=dict(cfg.backend_options), model=model,
            route=route, inputs=str(inputs.inputs_path),
            calibration=str(inputs.calibration_path) if inputs.calibration_path else None,
            batch_size=cfg.batch_size, measurement=dict(cfg.measurement),
            task_metric=cfg.task_metric, task_output=cfg.task_output,
            labels=str(inputs.labels_path) if inputs.labels_path else None,
            golden=str(ws.golden) if ws.golden.exists() else None,
            batch_axes=dict(inputs.batch_axes), profile_runs=cfg.profile_runs,
            measure_feeds=tuple(str(p) for p in getattr(inputs, "measure_feeds", ())),
            measure_labels=tuple(getattr(inputs, "measure_labels", ())),
        )
        return job.replace(**changes)

    def _timeouts(self, build_timeout: float | None = None) -> dict[str, float]:
        cfg = self.ctx.config
        build = build_timeout if build_timeout is not None else cfg.build_timeout_s
        measure = cfg.measure_timeout_s
        return {"start": build, "build": build, "warmup": measure, "measure": measure,
                "profile": measure, "report": measure}

    def _run(self, target: str, job: ChildJob, workdir: Path, timeouts: dict[str, float],
             on_phase: Callable[[str], None] | None = None) -> ChildResult:
        outcome = run_isolated(target, job.to_json(), workdir, timeouts=timeouts, on_phase=on_phase)
        if outcome.result is not None and outcome.status in ("ok", "duplicate"):
            res = ChildResult.from_json(outcome.result)
        else:
            res = ChildResult.from_json(outcome.result) if outcome.result else ChildResult(
                state=CandidateState.CRASHED
            )
            res = res.replace(state=state_of_status(outcome.status), error=outcome.error or "failed")
        return res.replace(phase=outcome.phase, phase_times=dict(outcome.phase_times))

    # -- evaluating a proposal -------------------------------------------------------------
    def evaluate(
        self, proposal: Proposal, number: int, history: Sequence[CandidateRecord],
        artifacts: dict[str, int], on_phase: Callable[[str], None], *,
        gate: DeviceGate | None = None, overlap: bool = False,
    ) -> CandidateRecord:
        """One process per candidate; with ``gate`` (building ahead) and ``overlap``, still one
        that waits for its device turn after building (``engine.scale.overlap``); with ``gate``
        alone two: ``build_only`` under the gate's build side, then the rest under its measuring
        side (thread-safe: the loop runs several at once, each in its own candidate folder)."""
        ws = self.ctx.workspace
        workdir = ws.candidate_dir(number)
        if workdir.exists():  # left by a tuner killed mid-candidate: that candidate re-runs
            stale = workdir.with_name(f"{workdir.name}.stale-{time.time_ns()}")
            workdir.rename(stale)
            shutil.rmtree(stale, ignore_errors=True)
        route = str(proposal.route)
        rec = CandidateRecord(
            number=number, requested_route=route, state=CandidateState.RUNNING,
            strategy_info=dict(proposal.info), started_at=time.time(), phase="start",
            log_path=str(workdir / "log.txt"),
        )
        try:
            return self._evaluate(rec, proposal, history, artifacts, on_phase, workdir, gate, overlap)
        except Exception as exc:  # noqa: BLE001 - a candidate's problem never kills the tuner
            text = str(exc) if isinstance(exc, GptunerError) else f"{type(exc).__name__}: {exc}"
            workdir.mkdir(parents=True, exist_ok=True)
            with (workdir / "log.txt").open("a", encoding="utf-8") as log:
                log.write("\n[gptuner tuner] error while handling this candidate's result:\n")
                log.write(traceback.format_exc())
            return rec.replace(
                state=CandidateState.CRASHED, finished_at=time.time(),
                error=f"error while handling the candidate's result: {text}",
            )

    def _evaluate(
        self, rec: CandidateRecord, proposal: Proposal, history: Sequence[CandidateRecord],
        artifacts: dict[str, int], on_phase: Callable[[str], None], workdir: Path,
        gate: DeviceGate | None = None, overlap: bool = False,
    ) -> CandidateRecord:
        cfg = self.ctx.config
        build_timeout = cfg.build_timeout_s
        if proposal.build_timeout_factor and history and history[0].build_time_s:
            build_timeout = min(build_timeout, max(1.0, proposal.build_timeout_factor * history[0].build_time_s))
        job = self.job(rec.requested_route, known_artifacts=dict(artifacts),
                       measure_scale=proposal.measure_scale)
        if rec.number > 0 and job.golden is None:  # built beside the default: its outputs are
            job = job.replace(golden=str(self.ctx.workspace.golden))  # there once it may measure
        timeline: dict[str, float] = {}
        if gate is None:
            res = self._run(BUILD_TARGET, job, workdir, self._timeouts(build_timeout), on_phase)
        elif overlap:
            res = self._run_overlapped(job, workdir, self._timeouts(build_timeout), on_phase, gate, timeline)
        else:
            res = self._run_split(job, workdir, self._timeouts(build_timeout), on_phase, gate, timeline)
        rec = rec.replace(
            phase=res.phase, finished_at=time.time(), effective_route=res.effective_route,
            build_time_s=res.build_time_s, artifact_path=res.artifact,
            artifact_sha256=res.sha256, artifact_size=res.size,
            extra={"artifact_key": res.artifact_key, "info": res.info, "phase_times": res.phase_times,
                   **({"profile": res.profile} if res.profile else {}),
                   **({"timeline": timeline} if timeline else {})},
        )
        if res.state is CandidateState.DUPLICATE:
            original = next(r for r in history if r.number == res.duplicate_of)
            return self._finish(rec.replace(
                state=CandidateState.DUPLICATE, duplicate_of=original.number,
                accuracy=original.accuracy, latency=original.latency, speedup=original.speedup,
                speedup_ci=original.speedup_ci, measure_time_s=0.0,
            ))
        if not res.ok:
            return self._finish(rec.replace(state=res.state, error=res.error or "failed"))
        rec = rec.replace(
            latency=res.latency, samples_ms=res.samples_ms, telemetry=res.telemetry,
            measure_time_s=res.measure_time_s,
        )
        if res.shapes:
            rec = rec.replace(extra={**rec.extra, "shapes": [sh.to_json() for sh in res.shapes]})
        rec = self._gate(rec, workdir, res)
        rec = verdict.with_speedup(rec, history[0] if history else None,
                                   objective=cfg.shape_objective)
        return self._finish(rec)

    def _run_split(self, job: ChildJob, workdir: Path, timeouts: dict[str, float],
                   on_phase: Callable[[str], None], gate: DeviceGate,
                   timeline: dict[str, float]) -> ChildResult:
        """Build in one process (a build slot), measure the artifact in another (the device);
        ``timeline`` gets the wall-clock instants of both (``rec.extra["timeline"]``)."""
        t0 = time.time()
        with gate.building():
            t1 = time.time()
            built = self._run(BUILD_ONLY_TARGET, job, workdir, timeouts, on_phase)
            t2 = time.time()
        timeline.update(queued=t0, build_start=t1, build_end=t2)
        if not built.ok or built.state is CandidateState.DUPLICATE:
            return built
        rest = job.replace(artifact=built.artifact, effective_route=built.effective_route,
                           info=dict(built.info))
        with gate.measuring():
            t3 = time.time()
            res = self._run(BUILD_TARGET, rest, workdir, timeouts, on_phase)
            t4 = time.time()
        timeline.update(measure_start=t3, measure_end=t4)
        times = {**built.phase_times, **{k: v for k, v in res.phase_times.items() if k != "start"}}
        return res.replace(
            effective_route=built.effective_route, info=built.info,
            artifact=built.artifact, sha256=built.sha256, artifact_key=built.artifact_key,
            size=built.size, build_time_s=built.build_time_s, phase_times=times,
        )

    def _run_overlapped(self, job: ChildJob, workdir: Path, timeouts: dict[str, float],
                        on_phase: Callable[[str], None], gate: Any,
                        timeline: dict[str, float]) -> ChildResult:
        """One process: build under a build slot, wait for the device turn, measure what it
        built (``engine.scale.overlap``); the wait has no timeout (the device's holder has)."""
        from gptuner_core.engine.scale.overlap import DeviceTurn
        from gptuner_core.engine.scale.overlap import core_split

        split = core_split()
        turn = DeviceTurn(gate, workdir, split)
        job = job.replace(turn={"build_cpus": list(split.build)})

        def phase(name: str) -> None:
            on_phase(name)  # first: the grant below waits for the device, and a candidate
            turn.on_phase(name)  # waiting for it is built (the rounds ahead start on that)

        try:
            turn.start()
            waits = {"wait": float("inf"), "ready": float("inf")}  # the device's holder has one
            res = self._run(BUILD_TARGET, job, workdir, {**timeouts, **waits}, phase)
        finally:
            turn.close()
            timeline.update(turn.timeline)
        return res

    def _gate(self, rec: CandidateRecord, workdir: Path, res: ChildResult) -> CandidateRecord:
        """The default route (candidate 0) defines the golden outputs and reference metric."""
        ws, cfg = self.ctx.workspace, self.ctx.config
        outputs = load_npz(workdir / "outputs.npz")
        settings = cfg.accuracy_settings()
        first = rec.number == 0 or not ws.golden.exists()
        if first:
            save_npz_atomic(ws.golden, outputs, compressed=True)
            if res.task_metric is not None:
                write_atomic(ws.reference, json.dumps({"task_metric": res.task_metric}).encode())
            golden, reference = outputs, None
        else:
            golden = load_npz(ws.golden)
            reference = None
            if ws.reference.exists():
                reference = json.loads(ws.reference.read_text(encoding="utf-8")).get("task_metric")
        result = verdict.gate(outputs, golden, settings, reference, task_value=res.task_metric,
                              task_error=res.task_error, task_details=res.task_details)
        if cfg.keep_artifacts != "all":  # the gate has read them (golden.npz keeps the default's)
            (workdir / "outputs.npz").unlink(missing_ok=True)
        if first and result.state is CandidateState.ACCURACY_FAILED and not res.task_error:
            result = verdict.GateResult(state=CandidateState.COMPLETE, accuracy=result.accuracy, error=None)
        return rec.replace(state=result.state, accuracy=result.accuracy, error=result.error)

    def _finish(self, rec: CandidateRecord) -> CandidateRecord:
        return rec  # whose artifacts stay is the sink's (engine.files.artifacts, --keep-artifacts)

    # -- re-measuring ----------------------------------------------------------------------
    def _measure_turn(self) -> dict[str, Any]:
        """With overlap on, a re-measurement runs on the measuring cores too (builds may run
        beside it on the others: ``engine.scale.overlap``)."""
        if self._turn is None:
            from gptuner_core.engine.scale.overlap import core_split
            from gptuner_core.engine.scale.overlap import overlap_enabled

            cpus = core_split().measure if overlap_enabled(self.ctx.config) else ()
            self._turn = {"cpus": list(cpus)} if cpus else {}
        return dict(self._turn)

    def remeasure_job(self, record: CandidateRecord, scale: float = 1.0) -> ChildJob:
        from gptuner_core.storage.paths import confined
        from gptuner_core.storage.paths import inside

        path = record.artifact_path
        root = next((r for r in self.artifact_roots if path and inside(path, r)), self.ctx.workspace.root)
        artifact = str(confined(path, root, what="artifact"))
        return self.job(
            record.requested_route, artifact=artifact,
            effective_route=record.effective_route, info=record.extra.get("info", {}),
            measure_scale=scale, task_metric=None, profile_runs=0, turn=self._measure_turn(),
        )

    def remeasure(self, record: CandidateRecord, purpose: str, scale: float = 1.0) -> ChildResult:
        from gptuner_core.engine.evaluate.rounds import record_split

        workdir = self.ctx.workspace.root / purpose
        prefetched = self._prefetch.take(purpose) if self._prefetch is not None else None
        res = prefetched or self._run(REMEASURE_TARGET, self.remeasure_job(record, scale), workdir,
                                      self._timeouts())
        record_split(workdir, res)
        return res

    def prefetching(self) -> bool:
        """Whether re-validation rounds start their processes together (overlap on)."""
        from gptuner_core.engine.scale.overlap import overlap_enabled

        return overlap_enabled(self.ctx.config)

    def prefetch_rounds(self, calls: list[RoundCall]) -> None:
        """Start these re-measurements now; each waits for its turn after loading
        (``engine.evaluate.round_prefetch``); ``remeasure`` with the same ``purpose`` gives the turn.
        A route whose loading runs work on the device (``Backend.load_uses_device``) is not
        started ahead: its processes load in their turn, never beside another measurement; where
        they may load side by side (``Backend.loads_side_by_side``), one turn loads those of the
        next rounds too (``RoundPrefetch``'s ``in_turn``)."""
        if self._loads is None:
            from functools import cache

            from gptuner_core.engine.scale.build_ahead import RouteDeviceUse
            from gptuner_core.routes import Route

            cfg = self.ctx.config
            uses = RouteDeviceUse(cfg.backend, dict(cfg.backend_options))
            self._loads = cache(lambda text: uses.round_loading(Route.parse(text)))
        where = [self._loads(c.record.requested_route) for c in calls]
        in_turn = [c for c, w in zip(calls, where, strict=True) if w == "in_turn"]
        calls = [c for c, w in zip(calls, where, strict=True) if w == "ahead"]
        if self._prefetch is None:
            from gptuner_core.engine.evaluate.round_prefetch import RoundPrefetch
            from gptuner_core.engine.scale.overlap import core_split

            split = core_split()
            self._prefetch = RoundPrefetch(self, split.build, split.measure, REMEASURE_TARGET)
        self._prefetch.start(calls, in_turn)

    def built_record(self, number: int, route: str) -> CandidateRecord | None:
        """Candidate ``number`` as its process built it, before its result (``engine.process.turn.BUILT``:
        it waits for the device or measures); ``None`` when it has not written its build."""
        from gptuner_core.engine.process.turn import BUILT

        path = self.ctx.workspace.candidate_dir(number) / BUILT
        try:
            res = ChildResult.from_json(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            return None
        if res.state is not CandidateState.COMPLETE or not res.artifact:
            return None
        return CandidateRecord(number=number, requested_route=route, state=CandidateState.COMPLETE,
                               artifact_path=res.artifact, effective_route=res.effective_route,
                               extra={"info": res.info or {}})

    def cancel_prefetched(self) -> None:
        if self._prefetch is not None:
            self._prefetch.cancel_all()
