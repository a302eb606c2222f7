"""Open (or continue) a study, wire the loop's parts, and finish it.

Accuracy filters, performance ranks: a candidate is eligible only when it built, ran, and passed
the accuracy gate; the fastest eligible candidate (median latency) wins, relative to the default
route (always candidate 0, 1.0x), and only after interleaved re-validation says its speed-up is
real. Every finished candidate is committed at once; ``resume=True`` continues exactly.

Everything a study needs is validated before anything is written; creation is atomic (see
``engine.files.workspace``); SIGTERM stops a study like SIGINT does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core import fingerprint as fp
from gptuner_core.backends import load_backend
from gptuner_core.engine.decide.finish import check_output_path
from gptuner_core.engine.decide.finish import revalidate_winner
from gptuner_core.engine.decide.finish import start_rounds_ahead
from gptuner_core.engine.decide.finish import write_output
from gptuner_core.engine.evaluate.protocol import StudyContext
from gptuner_core.engine.files.inputs import load_inputs
from gptuner_core.engine.files.inputs import measure_feeds
from gptuner_core.engine.files.inputs import open_inputs
from gptuner_core.engine.files.inputs import store_inputs
from gptuner_core.engine.files.inputs import store_measure_feeds
from gptuner_core.engine.files.workspace import StudyWorkspace
from gptuner_core.engine.loop.loop import Budget
from gptuner_core.engine.loop.loop import held
from gptuner_core.engine.loop.loop import run_loop
from gptuner_core.engine.loop.signals import sigterm_as_interrupt
from gptuner_core.engine.loop.sink import StoreSink
from gptuner_core.engine.loop.sink import measuring_device
from gptuner_core.engine.process.startup_trace import step
from gptuner_core.errors import ConfigError
from gptuner_core.errors import DeviceWaitEnded
from gptuner_core.errors import GptunerError
from gptuner_core.errors import StoreError
from gptuner_core.measurement import stats
from gptuner_core.records import Progress
from gptuner_core.records import StudyStatus
from gptuner_core.records import Winner


if TYPE_CHECKING:
    from gptuner_core.config import StudyConfig
    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.storage import StudyStore
    from gptuner_core.strategies import Strategy


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneSummary:
    study_dir: str
    status: StudyStatus
    candidates: int
    winner: Winner | None
    message: str
    output_error: str = ""
    warnings: tuple[str, ...] = ()
    tuning_s: float = 0.0  # the time budget's clock (waits for the device excluded)
    waited_s: float = 0.0  # time spent waiting for a device another study held


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
        outputs_only: bool = False,
    ) -> None:
        self.config = config
        self.ws = StudyWorkspace(study_dir)
        self.dir = self.ws.root
        self.resume = resume
        self.force = force
        self.progress_cb = progress
        self.outputs_only = outputs_only  # a finished study: write --output from its verdict only
        self.gate_warning = ""
        self.feeds: list = []  # (label, arrays) per --measure-shapes profile, for a new study

    # -- set-up ----------------------------------------------------------------------------
    def _describe(self) -> dict:
        from gptuner_core.expressions import Expression

        cfg = self.config
        self.backend = load_backend(cfg.backend, cfg.backend_options)
        model = Path(cfg.model)
        with step("cli", "input shapes"):
            self.specs = self.backend.input_specs(model)
        self.db = self.backend.describe(model)
        self.expr = Expression.parse(cfg.expression, self.db)
        return fp.compute(
            model=cfg.model, backend_name=cfg.backend, backend=self.backend, db=self.db,
            specs=self.specs, measured_shapes=cfg.measure_shapes,
        )

    def _open(self) -> StudyStore:
        from gptuner_core.storage import open_store

        self.ws.check_usable()
        current = self._describe()
        exists = self.ws.has_study()
        if exists and not self.resume:
            msg = (
                f"study folder '{self.dir}' already holds a study; pass --continue to resume it "
                "or choose another --study folder"
            )
            raise ConfigError(msg)
        if self.resume and not exists and self.ws.read_config() is None:
            msg = f"nothing to continue: no study in '{self.dir}' (expected {self.ws.store})"
            raise StoreError(msg)
        if not exists:  # a new study, or one whose creation a kill cut short
            self._create(current, *self._plan())
        store = open_store(self.dir)
        if exists:
            recorded = store.fingerprint()
            if set(recorded) <= {"recording"}:  # a recording written as a study (gptuner import
                store.set_fingerprint(current)  # --study) measured no setup: it takes this one
                recorded = current
            diffs = fp.differences(recorded, current)
            if diffs and not self.force:
                store.close()
                fp.check(self.dir, recorded, current)
            if diffs:
                store.add_event("force", {"differences": [[k, str(a), str(b)] for k, a, b in diffs]})
                store.set_fingerprint(current)
            # a default route that failed (the study stopped there: it defines 1.0x) runs again:
            # else nothing could ever finish the study (issue 43)
            default = store.candidate(0)
            dropped = store.delete_unfinished(also=(0,) if default is not None and not default.eligible else ())
            if dropped:
                store.add_event("resume", {"rerun": dropped})
        return store

    def _plan(self) -> tuple[object, object]:
        """A new study's whole plan, checked before its first write: inputs, calibration, the
        outputs the gate names, the strategy with its options and warm-start sources, the
        --output destination. Returns (dataset, calibration rows)."""
        from gptuner_core.engine.files.destinations import OUTPUT_SUFFIXES
        from gptuner_core.engine.files.destinations import check_destination
        from gptuner_core.engine.files.inputs import calibration_rows

        cfg = self.config
        dataset = load_inputs(cfg, self.specs)
        calibration = calibration_rows(cfg, self.specs, dataset)
        self.feeds = measure_feeds(cfg, self.specs, dataset)
        self._check_gate()
        self._plan_strategy()
        if cfg.output:
            check_destination(self.dir, cfg.output, "--output", suffixes=OUTPUT_SUFFIXES)
            check_output_path(cfg.output)
        return dataset, calibration

    def check_new(self) -> None:
        """Everything a new study in this folder needs, checked without writing anything (the
        dashboard's launch calls it before it writes ``study.json``); raises GptunerError."""
        self.ws.check_usable()
        self._describe()
        if self.ws.has_study():
            msg = f"study folder '{self.dir}' already holds a study (resume it, or choose another name)"
            raise ConfigError(msg)
        self._plan()

    def _check_gate(self) -> None:
        """Gated outputs must exist; a new study without any gate is refused unless it asked
        for none (``no_gate``: then a warning)."""
        from gptuner_core.accuracy import gate_warning
        from gptuner_core.config import require_gate

        if not self.resume:  # a study recorded before the rule still continues
            require_gate(self.config)
        settings = self.config.accuracy_settings()
        specs = self.backend.output_specs(Path(self.config.model))
        if specs is not None:  # gated outputs, slices and the task output fit the model
            settings.check_outputs({s.name: s.shape for s in specs})
        self.gate_warning = gate_warning(settings)

    def _scale_warnings(self, store: StudyStore) -> tuple[str, ...]:
        """A gated packed output whose norm one slice dominates (read from the golden outputs
        once the default route defined them), recorded as a ``warning`` event."""
        from gptuner_core.accuracy.slices import dominance_warnings
        from gptuner_core.engine.files.workspace import load_npz

        if not self.ws.golden.exists():
            return ()
        found = dominance_warnings(load_npz(self.ws.golden), self.config.accuracy_settings())
        for text in found:
            store.add_event("warning", {"gate": text})
        return tuple(found)

    def _create(self, current: dict, dataset: object, calibration: object) -> None:
        from gptuner_core.storage import open_store

        ws, cfg = self.ws, self.config
        ws.write_config(cfg.to_json())
        sha = store_inputs(ws, dataset, calibration)  # type: ignore[arg-type]
        store_measure_feeds(ws, self.feeds)
        staging = ws.prepare_creation()
        with open_store(staging) as store:
            store.init_study(cfg.to_json(), current)
            store.set_meta("knob_db", self.db.to_json())
            store.set_meta("inputs_sha256", sha)
            store.set_meta("batch_axes", dict(getattr(dataset, "batch_axes", {}) or {}))
            store.set_status(StudyStatus.CREATED)
        ws.commit_creation()

    def _device_lock(self) -> DeviceLock | None:
        """The measuring device's cross-process lock (none for a recorded run): one measuring
        study per device; another study waits ("waiting for device", shown in Live/Overview)."""
        from gptuner_core.device_lock import DeviceLock
        from gptuner_core.device_lock import measuring_devices

        device = measuring_device(self.config)
        return None if device is None else DeviceLock(measuring_devices(device), study=str(self.dir))

    def _prestart(self) -> None:
        """The candidates' launcher (a torch fork server: torch, Inductor, the model module)
        starts before the study's set-up, which it overlaps (not when only outputs are left, nor
        for a replay, which builds nothing); a bad ``$GPTUNER_START_METHOD`` is refused here,
        before anything is written."""
        from gptuner_core.engine.process.start_method import prestart

        cfg = self.config
        if not self.outputs_only and cfg.backend != "replay":
            prestart({"backend": cfg.backend, "backend_options": dict(cfg.backend_options),
                      "model": str(cfg.model)})

    def _evaluator(self, inputs: object) -> Evaluator:
        from gptuner_core.engine.evaluate.evaluator import make_evaluator

        ctx = StudyContext(config=self.config, workspace=self.ws, inputs=inputs)  # type: ignore[arg-type]
        return make_evaluator(ctx)  # its launcher was started by _prestart

    def _plan_strategy(self) -> Strategy:
        """The strategy with its warm-start routes: built before a new study is written, so a bad
        option or an unreadable warm-start source is refused with nothing on disk."""
        from gptuner_core.config_checks import checked_warm_start
        from gptuner_core.strategies import get_strategy

        cfg = self.config
        self.warm = checked_warm_start(cfg, self.expr, self.db)
        self.prior = None  # every result of the same studies, for strategies that model them (bo)
        if self.warm:
            from gptuner_core.strategies.warm_start import load_prior

            self.prior = load_prior(cfg.warm_start, self.expr)
        self.planned = get_strategy(
            cfg.search, self.expr, seed=cfg.seed, db=self.db, warm_start=self.warm, prior=self.prior,
            budgeted=bool(cfg.max_candidates or cfg.time_budget_s), **cfg.strategy_options,
        )
        return self.planned

    def _strategy(self, store: StudyStore) -> Strategy:
        planned = getattr(self, "planned", None)  # built by a new study's plan, unused until now
        strategy = planned if planned is not None else self._plan_strategy()
        if self.config.warm_start:
            store.add_event("warm_start", {"studies": list(self.config.warm_start),
                                           "routes": [str(r) for r in self.warm],
                                           "prior_results": len(self.prior) if self.prior else 0})
        return strategy

    # -- the run ---------------------------------------------------------------------------
    def run(self) -> TuneSummary:
        with sigterm_as_interrupt():
            self._prestart()
            store = self._open()
            try:
                return self._run(store)
            except BaseException as exc:
                status = StudyStatus.STOPPED if isinstance(exc, KeyboardInterrupt) else StudyStatus.FAILED
                with contextlib.suppress(Exception):  # never mask the error that stopped us
                    store.set_status(status, str(exc) or "interrupted")
                raise
            finally:
                with contextlib.suppress(Exception):
                    store.close()

    def _run(self, store: StudyStore) -> TuneSummary:
        from gptuner_core.routes import Route

        cfg = self.config
        self.ws.clear_stop()  # no tuner ran on this study, so any stop request is stale
        store.set_meta("pid", os.getpid())
        store.set_status(StudyStatus.RUNNING, "")
        if self.gate_warning:
            store.add_event("warning", {"gate": self.gate_warning})
        inputs = open_inputs(self.ws, cfg, self.specs, store.get_meta("inputs_sha256"),
                             store.get_meta("batch_axes"))
        pending = store.get_meta("pending") or {}
        again = pending.get("phase") == "output" or self.outputs_only
        winner = store.winner() if self.resume and again else None  # only the outputs are left
        stats.import_ahead()  # while the first candidates build: the first speed-up needs it
        evaluator = self._evaluator(inputs)
        strategy = self._strategy(store)
        history = store.candidates(with_samples=False)
        if history:
            default = store.candidate(0)
            history[0] = default if default is not None else history[0]
        for rec in history:
            strategy.tell(rec)
        sink = StoreSink(self.config, self.ws, self.progress_cb, store, strategy, store.progress())
        lock = self._device_lock()
        output_error = ""
        if winner is not None:  # killed while writing --output: the verdict stands, finish that
            status, message = StudyStatus.FINISHED, winner.headline()
        else:
            end = run_loop(
                strategy=strategy, evaluator=evaluator, history=history,
                key=lambda text: Route.parse(text).key(self.db),
                budget=Budget(max_candidates=cfg.max_candidates, time_budget_s=cfg.time_budget_s,
                              target_speedup=cfg.target_speedup, drift_every=cfg.drift_every),
                sink=sink, space_size=self.expr.count("full"), search=cfg.search,
                scale_out=cfg.scale_out(), device_lock=lock,
                built=lambda seen, settled, waiting: start_rounds_ahead(cfg, evaluator, seen, settled=settled,
                                                                       waiting=waiting),
            )
            status, message = end.status, end.reason
        scale_warnings = self._scale_warnings(store)
        if status is not StudyStatus.FAILED and winner is None:
            store.set_meta("pending", {"phase": "revalidation"})
            sink.report(history, "", "revalidation", None)
            left = cfg.time_budget_s - sink.elapsed_s() if cfg.time_budget_s is not None else None
            try:
                with held(lock, sink):  # every round on one quiet device
                    winner = revalidate_winner(
                        cfg, evaluator, store, history, time_left_s=left,
                        should_stop=self.ws.stop_requested,  # Stop cuts re-validation short
                        on_round=lambda d, t: sink.report(history, "", "revalidation", None, rounds=(d, t)),
                    )
            except DeviceWaitEnded as exc:  # stopped, or --device-wait spent, before re-validating
                status = StudyStatus.STOPPED if exc.stopped else StudyStatus.FAILED
                message = "; ".join(m for m in (message, str(exc)) if m)
            if winner is not None:
                store.set_winner(winner)
                # the status says why the study ended; the verdict is the winner record's, said once
                message = "; ".join(m for m in (message, winner.headline()) if m)
        getattr(evaluator, "cancel_prefetched", lambda: None)()  # rounds started ahead, not run
        if status is not StudyStatus.FAILED:
            if winner is not None and cfg.output:
                store.set_meta("pending", {"phase": "output"})  # a kill here: --continue writes them
                output_error = self._write_outputs(store, winner)
                if output_error:
                    message = f"{message}; {output_error}"
            store.set_meta("pending", None)
        if status is StudyStatus.FINISHED and self.ws.stop_requested():
            status = StudyStatus.STOPPED
        if status is StudyStatus.FINISHED and not history:  # nothing measured is no result
            status = StudyStatus.FAILED
            message = f"no candidate was measured ({message or 'nothing ran'})"
        self.ws.clear_stop()
        sink.report(history, "", "done", None, finished=True)
        store.set_status(status, message)
        from gptuner_core.measurement import health_summary

        store.set_meta("health", health_summary(store.candidates(), store.events("baseline")).to_json())
        return TuneSummary(
            study_dir=str(self.dir), status=status, candidates=len(history), winner=winner,
            message=message, output_error=output_error,
            tuning_s=sink.elapsed_s(), waited_s=sink.prior_waited + sink.waited_s,
            warnings=((self.gate_warning,) if self.gate_warning else ()) + scale_warnings,
        )


    def _write_outputs(self, store: StudyStore, winner: Winner) -> str:
        """``--output`` (the artifact and its sidecar) and ``--output``.bundle, each whole or not
        at all; an existing bundle there is this study's own, replaced. The error, or ``""``."""
        from gptuner_core.bundle import write_bundle

        try:
            write_output(self.config, store, winner, self.dir)
            out = Path(str(self.config.output))
            write_bundle(self.dir, out.with_name(out.name + ".bundle"), replace=True)
        except GptunerError as exc:
            store.add_event("warning", {"output": str(exc)})
            return str(exc)
        return ""


__all__ = ["Progress", "TuneSummary", "Tuner"]
