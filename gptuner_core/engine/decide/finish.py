"""After screening: interleaved re-validation into the one :class:`Winner`, and the output copy."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.engine.decide import verdict
from gptuner_core.engine.evaluate.rounds import round_samples
from gptuner_core.engine.files.workspace import write_atomic
from gptuner_core.errors import GptunerError
from gptuner_core.errors import StoreError


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Sequence

    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.engine.evaluate.round_prefetch import RoundCall
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import Winner
    from gptuner_core.storage import StudyStore


def revalidate_winner(
    cfg: StudyConfig,
    evaluator: Evaluator,
    store: StudyStore,
    history: list[CandidateRecord],
    on_round: Callable[[int, int], None] | None = None,
    *,
    time_left_s: float | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Winner | None:
    """Sequential interleaved re-validation of the top-K eligible candidates against the
    default, until each is decided or the round budget (``revalidate_rounds``) or the study's
    remaining time budget is spent (then the verdict is *inconclusive*, with the rounds needed)."""
    from gptuner_core.measurement import SequentialPlan
    from gptuner_core.measurement import revalidate_sequential

    if not history or not history[0].eligible:
        return None
    eligible = verdict.contenders(history)
    if not eligible:
        return verdict.default_only()
    top = eligible[: max(cfg.revalidate_top_k, 0)]
    shapes = len(cfg.measure_shapes) > 1  # the verdict per shape and overall
    if not top:
        return (verdict.shapes_screening if shapes else verdict.screening_only)(eligible[0], cfg.min_effect)
    by_number = {r.number: r for r in history}
    rounds = max(cfg.revalidate_rounds, 2)
    from gptuner_core.engine.loop.eta import per_route_s

    hint = per_route_s([r.measure_time_s or 0.0 for r in top]) if time_left_s is not None else None
    plan = SequentialPlan(
        min_effect=cfg.min_effect, min_rounds=min(4, rounds), max_rounds=rounds,
        max_time_s=max(time_left_s, 0.001) if time_left_s is not None else None,
    )

    def measure_fresh(number: int, round_index: int) -> list[float]:
        return round_samples(evaluator, by_number[number], round_purpose(round_index, number),
                             f"candidate #{number}")

    if shapes:
        from gptuner_core.engine.decide.shape_revalidation import revalidate_shapes

        try:
            winner, payload = revalidate_shapes(cfg, evaluator, top, history, plan, on_round)
        except GptunerError as exc:
            store.add_event("revalidation", {"error": str(exc)})
            return verdict.revalidation_failed(eligible[0], str(exc))
        store.add_event("revalidation", payload)
        return dataclasses.replace(winner, replayed=True) if cfg.backend == "replay" else winner
    from gptuner_core.engine.evaluate.round_prefetch import attach

    attach(measure_fresh, evaluator, lambda order: [round_call(by_number[n], r) for n, r in order])
    from gptuner_core.engine.decide.ties import TieOrder

    ties = TieOrder.of(history)
    began = time.time()  # round 0's processes may have started during screening (start_rounds_ahead)
    try:
        result = revalidate_sequential(
            [r.number for r in top], 0, measure_fresh, plan, seed=cfg.seed,
            on_round=(lambda done, total, _undecided: on_round(done, total)) if on_round else None,
            per_route_hint_s=hint, prefer=ties.key, should_stop=should_stop,
        )
    except GptunerError as exc:
        store.add_event("revalidation", {"error": str(exc)})
        return verdict.revalidation_failed(eligible[0], str(exc))
    finally:  # a process started ahead for a round that did not run
        getattr(evaluator, "cancel_prefetched", lambda: None)()
    from gptuner_core.engine.evaluate.rounds import round_times

    root = getattr(getattr(getattr(evaluator, "ctx", None), "workspace", None), "root", None)
    times = round_times(Path(root), since=began) if root is not None else []
    store.add_event("revalidation", {**result.to_json(), **({"round_times": times} if times else {})})
    win = verdict.too_busy(verdict.from_sequential(result, ties), history)
    return dataclasses.replace(win, replayed=True) if cfg.backend == "replay" else win


def round_purpose(round_index: int, number: int) -> str:
    """The work folder of candidate ``number``'s process in re-validation round ``round_index``."""
    return f"revalidation/r{round_index}_{number:05d}"


def round_call(record: CandidateRecord, round_index: int) -> RoundCall:
    """The re-measurement of ``record`` in re-validation round ``round_index`` (its own folder,
    a round's share of the sampling settings)."""
    from gptuner_core.engine.evaluate.round_prefetch import RoundCall
    from gptuner_core.engine.evaluate.rounds import ROUND_SCALE

    return RoundCall(record, round_purpose(round_index, record.number), ROUND_SCALE, round_index)


def start_rounds_ahead(cfg: StudyConfig, evaluator: Evaluator, history: list[CandidateRecord],
                       *, settled: bool = True, waiting: Sequence[tuple[int, str]] = ()) -> None:
    """Start re-validation processes ahead (``engine.evaluate.round_prefetch``), on the cores the
    builds leave, so that round 0 does not wait for their compile. From the default route's build
    (``history`` without it yet: it is ``waiting``) or its result, as long as other candidates
    still build (``settled`` false): only the default's processes of the first look (every study
    measures the default in each of its first ``min(4, rounds)`` rounds), at a priority below the
    builds. Once every candidate has been built: those of the default and of the finalists as
    screening ranks them now (none before the default's result), and the first look's processes of
    each candidate still ``waiting`` for its result (``(number, route)``), from the build its
    process wrote (``evaluator.built_record``): it may become a finalist, and one measured last in
    screening would otherwise make the rounds wait for its loads (the H100, session 54: started at
    its result, a finalist's round-1 process kept round 1 waiting 1.3-3.1 s). Round by round,
    the finalists' first. Called again as results come in; a hint that no longer names a process
    cancels it (a candidate whose result ranks it out of the top k). Nothing happens where
    re-validation will not run rounds of fresh processes here (no prefetching evaluator, top-k 0,
    several measured shapes), nor once the default route failed."""
    start = getattr(evaluator, "prefetch_rounds", None)
    if (start is None or not evaluator.prefetching() or cfg.revalidate_top_k <= 0  # type: ignore[attr-defined]
            or len(cfg.measure_shapes) > 1):
        return
    provisional = getattr(evaluator, "built_record", lambda _n, _r: None)
    measured = bool(history) and history[0].number == 0
    default = history[0] if measured else next(
        (provisional(n, route) for n, route in waiting if n == 0), None)
    if default is None or (measured and not default.eligible):  # not built yet, or failed
        return
    rounds = max(cfg.revalidate_rounds, 2)
    look = min(4, rounds)  # the first look: the default is measured in each of these rounds
    if not settled:
        start([round_call(default, r) for r in range(look)])
        return
    finalists = [default, *(verdict.contenders(history)[: cfg.revalidate_top_k] if measured else [])]
    maybe = [rec for rec in (provisional(n, route) for n, route in waiting if n != 0) if rec is not None]
    start([round_call(record, r) for r in range(rounds)
           for record in (finalists + maybe if r < look else finalists)])


def check_output_path(output: str) -> None:
    """Refuse an ``--output`` that cannot be written, before the study runs."""
    dst = Path(output)
    parent = next((p for p in [dst.parent, *dst.parent.parents] if p.exists()), None)
    if dst.exists() and dst.is_dir() and not any(dst.iterdir()):
        return
    if parent is None or not parent.is_dir():
        msg = f"--output '{output}': '{parent}' is not a folder (expected a writable path)"
        raise StoreError(msg)
    import os

    if not os.access(parent, os.W_OK | os.X_OK):
        msg = f"--output '{output}': '{parent}' is not writable (permission denied)"
        raise StoreError(msg)


def write_output(
    cfg: StudyConfig, store: StudyStore, winner: Winner, study_dir: Path
) -> Path | None:
    """Copy the recommended artifact to ``cfg.output`` with a JSON sidecar (the Winner record).

    Raises StoreError naming the write that failed; the study's results stay as recorded.
    """
    from gptuner_core.engine.files.export import copy_artifact
    from gptuner_core.storage.paths import confined_or_none

    assert cfg.output is not None
    rec = store.candidate(winner.number)
    src = confined_or_none(rec.artifact_path, study_dir) if rec is not None else None
    if rec is None or src is None or not src.exists():
        return None
    dst = Path(cfg.output).resolve()
    sidecar = dst.with_name(dst.name + ".json")
    try:
        # the model's folder: its external data (the model itself is checked by the fingerprint)
        copy_artifact(cfg.backend, cfg.backend_options, rec, dst,
                      allowed=[Path(study_dir), Path(cfg.model).absolute().parent])
        write_atomic(sidecar, json.dumps({
            "route": rec.requested_route,
            "effective_route": rec.effective_route,
            "candidate": rec.number,
            "verdict": winner.headline(),
            "verdict_text": winner.sentence(),
            "winner": winner.to_json(),
            "speedup": winner.speedup,
            "speedup_ci": list(winner.ci) if winner.ci else None,
            "significant": winner.significant,
            "latency_ms": rec.latency.median_ms if rec.latency else None,
            "accuracy": rec.accuracy.to_json() if rec.accuracy else None,
            "fingerprint": store.fingerprint(),
            "study": str(study_dir),
        }, indent=2).encode())
    except OSError as exc:
        from gptuner_core.errors import os_error_text

        msg = f"--output '{dst}': {os_error_text(exc)}"
        raise StoreError(msg) from None
    return dst
