"""The loop's sink for a real study: records to the store, progress and worker states to meta,
the device-waiting status; and which device a study measures on."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import Progress
from gptuner_core.records import StudyStatus


if TYPE_CHECKING:
    from collections.abc import Callable

    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.records import ChildResult
    from gptuner_core.records import Winner
    from gptuner_core.storage import StudyStore
    from gptuner_core.strategies import Proposal
    from gptuner_core.strategies import Strategy


def measuring_device(cfg: StudyConfig) -> str | None:
    """``cpu`` or ``cuda:N`` for the lock; ``None`` for a recorded (replay) study."""
    if cfg.backend == "replay":
        return None
    device = str(cfg.backend_options.get("device", "") or "")
    if cfg.backend in ("tensorrt", "trtexec"):
        return device if device.startswith("cuda") else f"cuda:{device or 0}"
    return device if device.startswith("cuda") else "cpu"


class StoreSink:
    """The loop's sink for a real study: records go to the store, progress to meta + callback.
    It gets the study's config, folder and progress callback, never the Tuner (which builds it)."""

    def __init__(self, config: StudyConfig, ws: StudyWorkspace, progress_cb: Callable[[Progress], None] | None,
                 store: StudyStore, strategy: Strategy, before: Progress) -> None:
        self.config = config
        self.ws = ws
        self.progress_cb = progress_cb
        self.store = store
        self.strategy = strategy
        self.started_mono = time.monotonic()
        self.prior_elapsed = float(before.elapsed_s or 0.0)
        self.prior_waited = float(before.waited_s or 0.0)
        self.waited_s = 0.0  # this run's time waiting for the device: not tuning time
        self.device_wait_s = config.device_wait_s
        self.times: list[float] = []
        self._history: list[CandidateRecord] = []
        self._waiting = False
        self._in_flight: set[int] = set()
        disk = store.get_meta("disk_use") or {}
        self._peak_disk = int(disk.get("peak", 0) or 0)
        self._freed = int(disk.get("freed", 0) or 0)  # bytes pruned or never kept (duplicates)

    def elapsed_s(self) -> float:
        """Tuning time over every run, waits for the device excluded (the time budget's clock)."""
        return self.prior_elapsed + time.monotonic() - self.started_mono - self.waited_s

    def reserve_s(self, rounds: int | None = None) -> float:
        """Time the screening leaves for re-validation's first look (``engine.loop.eta``); the loop's
        time budget ends screening that much earlier, so the study ends near its budget. With
        ``rounds`` (the ETA's): the time of that many rounds, the round budget, so the ETA errs
        on the side of finishing early."""
        from gptuner_core.engine.loop.eta import per_route_s
        from gptuner_core.engine.loop.eta import reserve_s

        cfg = self.config
        history = getattr(self, "_history", [])
        per_route = per_route_s([r.measure_time_s or 0.0 for r in history if r.latency is not None])
        contenders = sum(1 for r in history if r.eligible and r.number != 0)
        first_look = min(4, max(cfg.revalidate_rounds, 2))
        return reserve_s(per_route, cfg.revalidate_top_k, contenders, rounds or first_look)

    def waited(self, seconds: float) -> None:
        """Time spent waiting for the device (``engine.loop.loop.held``), reported separately."""
        self.waited_s += max(0.0, seconds)
        self._running()

    def stop_requested(self) -> bool:
        return self.ws.stop_requested()

    def _planned(self, done: int) -> int | None:
        planned = self.strategy.planned()
        cap = self.config.max_candidates
        if cap is not None:
            planned = min(planned or cap, cap)
        return max(planned, done) if planned is not None else None

    def report(
        self, history: list[CandidateRecord], current: str, phase: str,
        last: CandidateRecord | None, *, rounds: tuple[int, int] | None = None,
        finished: bool = False,
    ) -> None:
        from gptuner_core.engine.loop.eta import eta_s

        done = len(history)
        total = self._planned(done)
        self._history = history
        eta = eta_s(done=done, total=total, reserve=self.reserve_s(rounds=self.config.revalidate_rounds),
                    per_candidate=sum(self.times) / len(self.times) if self.times else None,
                    elapsed=self.elapsed_s(), time_budget=self.config.time_budget_s)
        if phase == "revalidation":
            eta = None  # Live shows the rounds themselves
        now = time.time()
        # screening's best while screening; once decided, the verdict's own speed-up (1.0 when
        # the default is kept): the stored progress never outlives the verdict with a screening
        # number (a torch study's progress kept 6.986x beside "inconclusive, default kept")
        winner = self.store.winner() if finished else None
        best = (winner.speedup if winner is not None else None) if finished else max(
            (r.speedup or 0.0 for r in history if r.eligible), default=None)
        progress = Progress(
            done=done, total=total, current=current, phase=phase,
            best_speedup=best,
            eta_s=0.0 if finished else eta, started_at=now - self.elapsed_s(),
            finished_at=now if finished else None, heartbeat=now,
            rounds_done=rounds[0] if rounds else None, rounds_total=rounds[1] if rounds else None,
            elapsed_s=self.elapsed_s(), waited_s=self.prior_waited + self.waited_s, last=last,
        )
        self.store.set_progress(progress)
        if finished:  # the study has its winner (or none): --keep-artifacts applied for good
            self._keep_artifacts(history, winner)
        if self.progress_cb is not None:
            self.progress_cb(progress)

    def _keep_artifacts(self, history: list[CandidateRecord], winner: Winner | None = None) -> None:
        """Prune the build outputs nobody needs any more (``engine.files.artifacts``) and record the
        study's disk use (meta ``disk_use``: now and the peak seen at candidate boundaries)."""
        from gptuner_core.engine.files import artifacts

        cfg, root = self.config, self.ws.root
        before = artifacts.disk_use(root)  # one walk (on the loop's thread: the hints wait for it)
        keep = artifacts.kept_numbers(history, cfg.keep_artifacts, cfg.revalidate_top_k, winner)
        freed = artifacts.prune_study(root, history, keep, busy=self._in_flight)
        if winner is not None and keep is not None:
            freed += artifacts.prune_remeasurements(root)
        self._freed += freed
        use = artifacts.disk_use(root) if freed else before  # a second walk only after a prune
        self._peak_disk = max(self._peak_disk, before.total, use.total)
        self.store.set_meta("disk_use", {**use.to_json(), "peak": self._peak_disk, "freed": self._freed})

    def _no_duplicate_copy(self, rec: CandidateRecord, history: list[CandidateRecord]) -> CandidateRecord:
        """A duplicate's own build goes; its record (stored and in ``history``) points at the
        first candidate's artifact."""
        from gptuner_core.engine.files.artifacts import drop_duplicate_copy

        original = next((r for r in history if r.number == rec.duplicate_of), None)
        if original is None:
            return rec
        from gptuner_core.engine.files.artifacts import build_outputs
        from gptuner_core.engine.files.artifacts import tree_bytes

        root = self.ws.root
        self._freed += sum(tree_bytes(p) for p in build_outputs(self.ws.candidate_dir(rec.number)))
        for i, r in enumerate(history):
            if r.number == rec.number:
                history[i] = drop_duplicate_copy(root, r, original)
        return drop_duplicate_copy(root, rec, original)

    def waiting(self, w: object) -> None:
        """Another study holds the measuring device: say so (status and progress)."""
        self._waiting = True
        message = getattr(w, "message", str(w))
        self.store.set_status(StudyStatus.WAITING, message)
        self.store.set_meta("waiting", message)
        self.store.add_event("waiting", {"message": message})
        if self.progress_cb is not None:  # the CLI says so too
            import dataclasses

            self.progress_cb(dataclasses.replace(self.store.progress(), phase="waiting",
                                                       current=message, eta_s=None))

    def _running(self) -> None:
        if self._waiting:
            self._waiting = False
            self.store.set_status(StudyStatus.RUNNING, "")
            self.store.set_meta("waiting", None)

    def workers(self, states: object) -> None:
        """Each scale-out worker's state (device, busy/idle, candidate), for Live."""
        self.store.set_meta("workers", states)

    def started(self, rec: CandidateRecord) -> None:
        self._running()
        log = self.ws.candidate_dir(rec.number) / "log.txt"
        self._in_flight.add(rec.number)
        self.store.put_candidate(rec.replace(log_path=str(log)))

    def finished(self, rec: CandidateRecord, history: list[CandidateRecord]) -> None:
        """Record a finished candidate (``history`` already holds it), then apply
        ``--keep-artifacts`` to the candidates that can no longer be contenders."""
        self._in_flight.discard(rec.number)
        if rec.started_at and rec.finished_at:  # per candidate: right with several in flight
            self.times.append(max(0.0, rec.finished_at - rec.started_at))
        if rec.state is CandidateState.DUPLICATE and rec.duplicate_of is not None:
            rec = self._no_duplicate_copy(rec, history)
        elif self.config.keep_artifacts != "all" and rec.artifact_path:
            from gptuner_core.engine.files.artifacts import trim_folder

            self._freed += trim_folder(self.ws.candidate_dir(rec.number), rec.extra.get("info") or {})
        self.store.put_candidate(rec)
        self._history = history
        self._keep_artifacts(history)
        self.report(history, "", "idle", rec)

    def replaced(self, rec: CandidateRecord) -> None:
        self.store.put_candidate(rec)

    def skipped(self, proposal: Proposal) -> None:
        pass

    def phase(self, route: str, phase: str, history: list[CandidateRecord]) -> None:
        self._running()
        self.report(history, route, phase, None)

    def baseline(self, after: int, result: ChildResult) -> None:
        if not result.ok or result.latency is None:
            self.store.add_event("baseline_failed", {"after_candidate": after, "error": result.error})
            return
        self.store.add_event("baseline", {
            "after_candidate": after, "time": time.time(),
            "median_ms": result.latency.median_ms, "cv": result.latency.cv,
            "telemetry": result.telemetry,
        })

    def baselines_done(self) -> set[int]:
        events = self.store.events("baseline") + self.store.events("baseline_failed")
        return {int(e.payload.get("after_candidate", -1)) for e in events}
