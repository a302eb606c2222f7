"""Is A faster than B? Sequential interleaved rounds for exactly two candidates of a study.

Each round measures both stored artifacts in fresh processes (the study's evaluator), in a
random order, while the study's measuring device is held (:mod:`gptuner_core.device_lock`:
another study measuring there makes the comparison wait, "waiting for device ..."). The outcome
is one :class:`~gptuner_core.records.pairwise.Comparison`, stored as a ``pairwise`` event (with
the full :class:`~gptuner_core.measurement.SequentialResult` beside it) so Compare shows it later;
``gptuner revalidate`` prints the same record.

Every run has a folder ``STUDY/pairwise/AAAAA_BBBBB-<stamp>/``: the measurements' work folders
and ``state.json`` (a :class:`~gptuner_core.records.pairwise.PairwiseProgress`, rewritten
atomically while the run waits and measures; see :mod:`gptuner_core.engine.decide.pairwise_jobs`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.engine.files.artifacts import needs_rebuild
from gptuner_core.errors import ConfigError
from gptuner_core.records.pairwise import Comparison
from gptuner_core.records.pairwise import PairwiseProgress


if TYPE_CHECKING:
    from gptuner_core.config import StudyConfig
    from gptuner_core.measurement import SequentialResult
    from gptuner_core.records import CandidateRecord

FOLDER = "pairwise"
STATE = "state.json"


def run_dir(study_dir: str | Path, a: int, b: int) -> Path:
    """A new run folder ``STUDY/pairwise/AAAAA_BBBBB-<ms since epoch>`` (not created)."""
    return Path(study_dir) / FOLDER / f"{a:05d}_{b:05d}-{time.time_ns() // 1_000_000}"


def write_progress(folder: Path, progress: PairwiseProgress) -> None:
    from gptuner_core.engine.files.workspace import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / STATE, json.dumps(progress.to_json()).encode())


def check_pair(study_dir: str | Path, a: int, b: int) -> tuple[StudyConfig, dict[int, CandidateRecord]]:
    """The study's settings and both records; one :class:`ConfigError` line when the pair
    cannot be compared (the same number twice, a number not in the study, no artifact)."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.storage import open_store

    ws = StudyWorkspace(study_dir)
    if a == b:
        msg = f"compare two different candidates (got #{a} twice)"
        raise ConfigError(msg)
    if not ws.has_study():
        msg = f"no study in '{ws.root}' (expected a folder with study.sqlite)"
        raise ConfigError(msg)
    with open_store(ws.root, readonly=True) as store:
        raw = store.config()
        recs = {n: store.candidate(n) for n in (a, b)}
    missing = [n for n, rec in recs.items() if rec is None]
    if missing:  # both numbers checked before either record is looked at
        msg = f"candidate #{missing[0]} is not in the study '{ws.root}'"
        raise ConfigError(msg)
    if raw.get("backend") == "replay":  # an imported space, or a study replayed from one
        msg = (f"'{ws.root}' was replayed from a recording (backend 'replay'): nothing was built, "
               "so there is nothing to re-measure (its figures are the recording's)")
        raise ConfigError(msg)
    cfg = StudyConfig.from_json(raw)
    for n, rec in recs.items():
        assert rec is not None
        if not rec.eligible:
            msg = (f"candidate #{n} is {rec.state.value}: only candidates that built, measured "
                   "and passed the accuracy gate can be compared")
            raise ConfigError(msg)
        from gptuner_core.storage.paths import confined

        if rec.artifact_path:
            confined(rec.artifact_path, ws.root, what=f"candidate #{n}'s artifact")  # never followed out
        gone = not rec.artifact_path or not Path(rec.artifact_path).exists()
        if gone and not (rec.artifact_path and needs_rebuild(rec.artifact_path, {})):  # pruned: rebuilt
            msg = (f"candidate #{n} has no measurable artifact (artifact "
                   f"{rec.artifact_path or 'none'} is gone: the study was tuned with --discard-artifacts, or the file was removed)")
            raise ConfigError(msg)
    return cfg, recs  # type: ignore[return-value]


def comparison_of(result: SequentialResult, a: int, b: int) -> Comparison:
    """The stored/printed record of a finished sequential run of ``b`` against ``a``."""
    c = result.contender(b)
    est = c.estimate
    return Comparison(
        reference=a, candidate=b, verdict=c.status if c.status != "outclassed" else "not_faster",
        speedup=est.point if est is not None else None, ci=est.ci if est is not None else None,
        confidence=est.confidence if est is not None and est.confidence else result.plan.confidence,
        rounds=result.rounds, max_rounds=result.plan.max_rounds, method=result.method,
        min_effect=result.plan.min_effect, stop_reason=result.stop_reason,
        projected_rounds=c.projected_rounds, error=c.error, elapsed_s=result.elapsed_s,
        finished_at=time.time(),
    )


def compare_candidates(
    study_dir: str | Path, a: int, b: int, *, max_rounds: int | None = None,
    folder: Path | None = None, lock_timeout_s: float | None = None,
    on_progress: Callable[[PairwiseProgress], None] | None = None,
) -> Comparison:
    """Re-measure candidates ``a`` (the reference) and ``b`` interleaved until decided.

    ``folder``: the run folder (default :func:`run_dir`); ``lock_timeout_s``: give up
    (:class:`~gptuner_core.errors.DeviceBusyError`) when the device stays busy that long;
    ``on_progress``: called with each progress record written to ``state.json``.
    """
    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.device_lock import measuring_devices
    from gptuner_core.engine.evaluate.evaluator import study_evaluator
    from gptuner_core.engine.evaluate.rounds import round_samples
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.engine.loop.sink import measuring_device
    from gptuner_core.measurement import SequentialPlan
    from gptuner_core.measurement import revalidate_sequential
    from gptuner_core.storage import open_store

    if max_rounds is not None and max_rounds < 2:
        msg = f"max_rounds must be an integer >= 2 (got {max_rounds})"
        raise ConfigError(msg)
    cfg, recs = check_pair(study_dir, a, b)
    ws = StudyWorkspace(study_dir)
    folder = Path(folder) if folder is not None else run_dir(ws.root, a, b)
    if not ws.contains(folder):
        msg = f"the run folder must be inside the study folder '{ws.root}' (got '{folder}')"
        raise ConfigError(msg)
    rounds = max_rounds or max(cfg.revalidate_rounds, 2)

    def progress(phase: str, done: int = 0, message: str = "") -> None:
        record = PairwiseProgress(reference=a, candidate=b, phase=phase, rounds_done=done,
                                  max_rounds=rounds, message=message, pid=os.getpid(),
                                  updated_at=time.time())
        write_progress(folder, record)
        if on_progress is not None:
            on_progress(record)

    evaluator = study_evaluator(ws, cfg)
    relative = folder.resolve().relative_to(ws.root.resolve())

    def measure_fresh(number: int, round_index: int) -> list[float]:
        return round_samples(evaluator, recs[number], str(relative / f"r{round_index}_{number:05d}"),
                             f"candidate #{number}")

    plan = SequentialPlan(min_effect=cfg.min_effect, min_rounds=min(4, rounds), max_rounds=rounds)
    device = measuring_device(cfg)
    progress("measuring" if device is None else "starting")
    lock = None if device is None else DeviceLock(measuring_devices(device), study=f"{ws.root} (compare #{a} #{b})")
    try:
        if lock is not None:
            with lock.held(lock_timeout_s, on_wait=lambda w: progress("waiting", 0, w.message)):
                progress("measuring")
                result = revalidate_sequential(
                    [b], a, measure_fresh, plan, seed=cfg.seed,
                    on_round=lambda n, _total, _left: progress("measuring", n))
        else:
            result = revalidate_sequential([b], a, measure_fresh, plan, seed=cfg.seed,
                                           on_round=lambda n, _total, _left: progress("measuring", n))
    except Exception as exc:
        progress("failed", 0, str(exc))
        raise
    comparison = comparison_of(result, a, b)
    with open_store(ws.root) as store:
        store.add_event("pairwise", {**comparison.to_json(), "sequential": result.to_json(),
                                     "folder": str(relative)})
    progress("done", result.rounds, comparison.headline())
    return comparison


def stored_comparisons(study_dir: str | Path) -> list[Comparison]:
    """Every comparison stored with the study, oldest first."""
    from gptuner_core.storage import open_store

    with open_store(study_dir, readonly=True) as store:
        events = store.events("pairwise")
    return [Comparison.from_json(e.payload) for e in events]


def latest_comparison(study_dir: str | Path, a: int, b: int) -> Comparison | None:
    """The newest stored comparison of ``b`` against ``a`` (``None`` when there is none)."""
    found = [c for c in stored_comparisons(study_dir) if (c.reference, c.candidate) == (a, b)]
    return found[-1] if found else None
