"""The tuning loop: ask the strategy, run the candidate isolated, gate, rank, store, tell.

Accuracy filters, performance ranks: a candidate is eligible only when it built, ran, and passed
the accuracy gate; the fastest eligible candidate (median latency) wins, relative to the default
route (always candidate 0, 1.0x), and only after interleaved re-validation says its speed-up is
real. Every finished candidate is committed at once; ``resume=True`` continues exactly.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core import fingerprint as fp
from gptuner_core.backends import load_backend
from gptuner_core.config import StudyConfig
from gptuner_core.engine.isolation import run_isolated
from gptuner_core.engine.remeasure import drift_sentinel
from gptuner_core.engine.remeasure import latency_of
from gptuner_core.engine.remeasure import race_remeasure
from gptuner_core.engine.steps import StudyInputs
from gptuner_core.engine.steps import gate
from gptuner_core.engine.steps import load_inputs
from gptuner_core.engine.steps import prepare_inputs
from gptuner_core.engine.steps import revalidate_winner
from gptuner_core.engine.steps import with_speedup
from gptuner_core.engine.steps import write_output
from gptuner_core.errors import ConfigError
from gptuner_core.errors import StoreError
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState


if TYPE_CHECKING:
    from gptuner_core.storage import StudyStore
    from gptuner_core.strategies._base import Proposal

STOP_FILE = "stop"
CANDIDATES = "candidates"


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    done: int
    total: int | None
    current: str
    phase: str
    best_speedup: float | None
    eta_s: float | None
    last: CandidateRecord | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneSummary:
    study_dir: str
    status: str
    candidates: int
    winner: dict[str, Any] | None
    message: str


def _state_of(status: str) -> CandidateState:
    return {
        "build_failed": CandidateState.BUILD_FAILED,
        "timed_out": CandidateState.TIMED_OUT,
        "crashed": CandidateState.CRASHED,
        "accuracy_failed": CandidateState.ACCURACY_FAILED,
    }.get(status, CandidateState.CRASHED)


class Tuner:
    """Runs one study. ``progress`` is called after every phase change and candidate."""

    def __init__(
        self,
        config: StudyConfig,
        study_dir: str | Path,
        *,
        resume: bool = False,
        force: bool = False,
        progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.config = config
        self.dir = Path(study_dir).resolve()
        self.resume = resume
        self.force = force
        self.progress_cb = progress
        self._run_started = time.monotonic()

    # -- set-up ----------------------------------------------------------------------------
    def _open(self) -> StudyStore:
        from gptuner_core.expressions import Expression
        from gptuner_core.storage import open_store

        cfg = self.config
        self.backend = load_backend(cfg.backend, cfg.backend_options)
        model = Path(cfg.model)
        self.specs = self.backend.input_specs(model)
        self.db = self.backend.describe(model)
        self.expr = Expression.parse(cfg.expression, self.db)
        current = fp.compute(
            model=cfg.model, backend_name=cfg.backend, backend=self.backend, db=self.db,
            specs=self.specs,
        )
        exists = (self.dir / "study.sqlite").exists()
        if exists and not self.resume:
            msg = (
                f"study folder '{self.dir}' already holds a study; pass --continue to resume it "
                "or choose another --study folder"
            )
            raise ConfigError(msg)
        if self.resume and not exists:
            msg = f"nothing to continue: no study in '{self.dir}' (expected {self.dir}/study.sqlite)"
            raise StoreError(msg)
        self._dataset = None
        if not self.resume:  # bad input is refused before anything is written
            self._dataset = load_inputs(cfg, self.specs)
        self.dir.mkdir(parents=True, exist_ok=True)
        store = open_store(self.dir)
        if self.resume:
            recorded = store.fingerprint()
            diffs = fp.differences(recorded, current)
            if diffs and not self.force:
                store.close()
                fp.check(self.dir, recorded, current)
            if diffs:
                store.add_event(
                    "force",
                    {"differences": [[k, str(a), str(b)] for k, a, b in diffs]},
                )
                store.set_fingerprint(current)
            dropped = store.delete_unfinished()
            if dropped:
                store.add_event("resume", {"rerun": dropped})
        else:
            store.init_study(cfg.to_json(), current)
            store.set_meta("knob_db", self.db.to_json())
        return store

    # -- the loop --------------------------------------------------------------------------
    def run(self) -> TuneSummary:
        from gptuner_core.strategies import get_strategy

        store = self._open()
        cfg = self.config
        try:
            store.set_meta("pid", os.getpid())
            store.set_meta("status", "running")
            store.set_meta("status_message", "")
            self.inputs = prepare_inputs(cfg, self.dir, self.specs, self._dataset)
            warm = []
            if cfg.warm_start:
                from gptuner_core.strategies.warm_start import model_family
                from gptuner_core.strategies.warm_start import warm_start_routes

                warm = warm_start_routes(
                    cfg.warm_start, self.expr, db=self.db,
                    model_family_name=model_family(cfg.to_json()),
                )
                store.add_event("warm_start", {"studies": list(cfg.warm_start),
                                               "routes": [str(r) for r in warm]})
            options = dict(cfg.strategy_options)
            if cfg.max_candidates or cfg.time_budget_s:
                # an explicit budget replaces the default strategy's automatic one
                from gptuner_core.strategies import strategy_class

                if "budget_fraction" in strategy_class(cfg.search).options:
                    options.setdefault("budget_fraction", 0.0)
            strategy = get_strategy(
                cfg.search, self.expr, seed=cfg.seed, db=self.db, warm_start=warm, **options,
            )
            history = store.candidates(with_samples=False)
            if history:
                default = store.candidate(0)
                history[0] = default if default is not None else history[0]
            for rec in history:
                strategy.tell(rec)
            status, message = self._loop(store, strategy, history)
            winner = None
            if status != "failed":
                winner = revalidate_winner(self, store, history)
                if winner is not None:
                    store.set_meta("winner", winner)
                    message = "; ".join(m for m in (message, winner.get("message", "")) if m)
                    if cfg.output and winner.get("number") is not None:
                        write_output(self, store, winner)
            if status == "finished" and self._stop_requested():
                status = "stopped"
            self._clear_stop()
            progress = store.get_meta("progress") or {}
            store.set_meta("progress", {**progress, "phase": "done", "current": "",
                                        "eta_s": 0.0, "finished_at": time.time()})
            store.set_meta("status", status)
            store.set_meta("status_message", message)
            from gptuner_core.measurement import health_summary

            store.set_meta(
                "health", health_summary(store.candidates(), store.events("baseline")).to_json()
            )
            return TuneSummary(
                study_dir=str(self.dir), status=status, candidates=len(history),
                winner=winner, message=message,
            )
        except BaseException as exc:
            store.set_meta("status", "failed" if not isinstance(exc, KeyboardInterrupt) else "stopped")
            store.set_meta("status_message", str(exc))
            raise
        finally:
            store.close()

    def _stop_requested(self) -> bool:
        return (self.dir / STOP_FILE).exists()

    def _clear_stop(self) -> None:
        if self._stop_requested():
            (self.dir / STOP_FILE).unlink()

    def _budget_reason(self, history: list[CandidateRecord]) -> str:
        cfg = self.config
        if self._stop_requested():
            return "stopped on request"
        if cfg.max_candidates is not None and len(history) >= cfg.max_candidates:
            return f"candidate budget reached ({cfg.max_candidates})"
        if cfg.time_budget_s is not None:
            if time.monotonic() - self._run_started >= cfg.time_budget_s:
                return f"time budget reached ({cfg.time_budget_s:g} s)"
        if cfg.target_speedup is not None:
            best = max((r.speedup or 0.0 for r in history if r.eligible), default=0.0)
            if best >= cfg.target_speedup:
                return f"target speed-up {cfg.target_speedup:g}x reached ({best:.3f}x)"
        return ""

    def _planned(self, strategy: Any) -> int | None:
        planned = strategy.planned()
        if self.config.max_candidates is not None:
            planned = min(planned or self.config.max_candidates, self.config.max_candidates)
        return planned

    def _loop(self, store: StudyStore, strategy: Any, history: list[CandidateRecord]) -> tuple[str, str]:
        seen = {self._key(r.requested_route) for r in history if "remeasure_of" not in r.strategy_info}
        artifacts = {
            r.extra["artifact_key"]: r.number
            for r in history
            if r.extra.get("artifact_key") and r.state is CandidateState.COMPLETE
        }
        times: list[float] = []
        skipped = 0
        while True:
            reason = self._budget_reason(history)
            if reason:
                return ("stopped" if "stopped" in reason else "finished"), reason
            proposal = strategy.ask(history)
            if proposal is None:
                if not history:
                    return "finished", "no route proposed"
                if len(history) >= self.expr.count("full"):
                    return "finished", "search space exhausted"
                return "finished", (
                    f"strategy '{self.config.search}' finished after {len(history)} of "
                    f"{self.expr.count('full')} routes"
                )
            remeasure_of = proposal.info.get("remeasure_of")
            if remeasure_of is not None:
                race_remeasure(self, store, strategy, history, proposal, int(remeasure_of))
                continue
            key = self._key(str(proposal.route))
            if key in seen:
                skipped += 1
                if skipped > 10_000:
                    return "finished", f"strategy '{self.config.search}' kept proposing evaluated routes"
                continue
            seen.add(key)
            t0 = time.monotonic()
            rec = self._evaluate(store, strategy, history, proposal, artifacts)
            times.append(time.monotonic() - t0)
            # raw samples stay in the store; only the default's are kept (speed-ups need them)
            history.append(rec if rec.number == 0 else rec.replace(samples_ms=()))
            strategy.tell(rec)
            if rec.number == 0 and not rec.eligible:
                msg = (
                    f"the default route failed ({rec.state.value}: {rec.error}); it defines 1.0x, "
                    "so the study cannot rank routes"
                )
                return "failed", msg
            if rec.state is CandidateState.COMPLETE and rec.extra.get("artifact_key"):
                artifacts.setdefault(rec.extra["artifact_key"], rec.number)
            drift_sentinel(self, store, history)
            self._report(store, strategy, history, times, "", "idle", rec)

    def _key(self, route_text: str) -> str:
        from gptuner_core.routes import Route

        return Route.parse(route_text).key(self.db)

    def _report(
        self, store: StudyStore, strategy: Any, history: list[CandidateRecord],
        times: list[float], current: str, phase: str, last: CandidateRecord | None,
    ) -> None:
        planned = self._planned(strategy)
        done = len(history)
        eta = None
        if times and planned is not None:
            eta = max(planned - done, 0) * (sum(times) / len(times))
        best = max((r.speedup or 0.0 for r in history if r.eligible), default=None)
        progress = {
            "done": done, "total": planned, "current": current, "phase": phase,
            "started_at": time.time() - (time.monotonic() - self._run_started), "eta_s": eta,
            "best_speedup": best,
        }
        store.set_meta("progress", progress)
        if self.progress_cb is not None:
            self.progress_cb(
                Progress(done=done, total=planned, current=current, phase=phase,
                         best_speedup=best, eta_s=eta, last=last)
            )

    def job(self, route: str, **extra: Any) -> dict[str, Any]:
        cfg = self.config
        job = {
            "backend": cfg.backend,
            "backend_options": cfg.backend_options,
            "model": str(Path(cfg.model).resolve()) if ":" not in cfg.model or Path(cfg.model).exists() else cfg.model,
            "route": route,
            "inputs": str(self.inputs.inputs_path),
            "calibration": str(self.inputs.calibration_path) if self.inputs.calibration_path else None,
            "batch_size": cfg.batch_size,
            "measurement": cfg.measurement,
        }
        job.update(extra)
        return job

    def _evaluate(
        self, store: StudyStore, strategy: Any, history: list[CandidateRecord],
        proposal: Proposal, artifacts: dict[str, int],
    ) -> CandidateRecord:
        cfg = self.config
        number = (history[-1].number + 1) if history else 0
        workdir = self.dir / CANDIDATES / f"{number:05d}"
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
        store.put_candidate(rec)
        build_timeout = cfg.build_timeout_s
        if proposal.build_timeout_factor and history and history[0].build_time_s:
            build_timeout = min(build_timeout, max(1.0, proposal.build_timeout_factor * history[0].build_time_s))
        self._report(store, strategy, history, [], route, "build", None)
        outcome = run_isolated(
            "gptuner_core.engine.child:run_candidate",
            self.job(route, known_artifacts=artifacts, measure_scale=proposal.measure_scale),
            workdir,
            timeouts={"start": build_timeout, "build": build_timeout, "measure": cfg.measure_timeout_s},
            on_phase=lambda ph: self._report(store, strategy, history, [], route, ph, None),
        )
        res = outcome.result or {}
        common = dict(
            phase=outcome.phase, finished_at=time.time(),
            effective_route=res.get("effective_route"),
            build_time_s=res.get("build_time_s"),
            artifact_path=res.get("artifact"), artifact_sha256=res.get("sha256"),
            artifact_size=res.get("size"),
            extra={"artifact_key": res.get("artifact_key"), "info": res.get("info", {}),
                   "phase_times": outcome.phase_times},
        )
        if outcome.status == "duplicate":
            original = next(r for r in history if r.number == res["duplicate_of"])
            return self._finish(store, rec.replace(
                state=CandidateState.DUPLICATE, duplicate_of=original.number,
                accuracy=original.accuracy, latency=original.latency,
                speedup=original.speedup, speedup_ci=original.speedup_ci,
                measure_time_s=0.0, **common,
            ), workdir)
        if outcome.status != "ok":
            return self._finish(store, rec.replace(
                state=_state_of(outcome.status), error=outcome.error or "failed", **common,
            ), workdir)
        rec = rec.replace(
            latency=latency_of(res), samples_ms=tuple(res.get("samples_ms", ())),
            telemetry=res.get("telemetry", {}), measure_time_s=res.get("measure_time_s"),
            **common,
        )
        if "recorded_accuracy" in res:  # replayed: the recording's own verdict
            verdict = res["recorded_accuracy"]
            acc = verdict.get("accuracy")
            failed = verdict.get("state") == CandidateState.ACCURACY_FAILED.value
            rec = rec.replace(
                accuracy=AccuracyResult.from_json(acc) if acc else None,
                state=CandidateState.ACCURACY_FAILED if failed else CandidateState.COMPLETE,
                error=verdict.get("error") if failed else None,
            )
        else:
            rec = gate(self, rec, workdir)
        rec = with_speedup(rec, history)
        return self._finish(store, rec, workdir)

    def _finish(self, store: StudyStore, rec: CandidateRecord, workdir: Path) -> CandidateRecord:
        if not self.config.keep_artifacts and rec.number != 0 and rec.artifact_path:
            art = Path(rec.artifact_path)
            shutil.rmtree(art, ignore_errors=True) if art.is_dir() else art.unlink(missing_ok=True)
        store.put_candidate(rec)
        return rec

__all__ = ["Progress", "StudyInputs", "TuneSummary", "Tuner"]
