"""What Compare shows for "is B faster than A?": the screening estimate (labelled as such), the
state of a background comparison, and the stored :class:`~gptuner_core.records.pairwise.Comparison`
(the record ``gptuner revalidate`` prints). Pure: the page only renders these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from gptuner_core.engine.decide.pairwise_jobs import PairwiseJob
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records.pairwise import Comparison

#: round budgets offered on the page (the CLI takes any integer >= 2)
ROUND_CHOICES = (4, 6, 10, 20, 40)


def screening_line(a: CandidateRecord, b: CandidateRecord) -> str:
    """B against A from their screening windows (one process each): never a verdict."""
    from gptuner_core.errors import GptunerError
    from gptuner_core.measurement.stats import speedup

    if not a.samples_ms or not b.samples_ms:
        return f"Screening: #{b.number} vs #{a.number} has no latency samples on one side."
    try:
        est = speedup(a.samples_ms, b.samples_ms)
    except GptunerError as exc:
        return f"Screening: #{b.number} vs #{a.number}: {exc}"
    return (f"Screening (one window each, not a verdict): #{b.number} vs #{a.number} {est}. "
            "Processes differ more than windows do: re-validate to decide.")


@dataclass(frozen=True, slots=True, kw_only=True)
class PairwiseStatus:
    """The comparison panel: ``state`` (``none``, ``starting``, ``waiting``, ``measuring``,
    ``done``, ``failed``), a progress ``text`` and ``fraction``, the failure ``cause``, and
    ``result``, the newest stored comparison of the pair (kept when a later run failed)."""

    state: str
    running: bool
    text: str
    fraction: float
    cause: str = ""
    result: Comparison | None = None


def pairwise_status(job: PairwiseJob | None, stored: Comparison | None) -> PairwiseStatus:
    if job is None:
        return PairwiseStatus(state="none" if stored is None else "done", running=False,
                              text="" if stored is None else stored.headline(),
                              fraction=1.0 if stored else 0.0, result=stored)
    p = job.progress
    pair = f"#{p.candidate} vs #{p.reference}"
    total = p.max_rounds or 0
    fraction = min(1.0, p.rounds_done / total) if total else 0.0
    if p.phase == "failed":
        return PairwiseStatus(state="failed", running=False, text=f"{pair} failed: {job.cause}",
                              fraction=fraction, cause=job.cause, result=stored)
    if p.phase == "done":
        return PairwiseStatus(state="done", running=False, text=p.message or pair, fraction=1.0,
                              result=stored)
    if p.phase == "waiting":
        text = f"{pair}: {p.message or 'waiting for device'}"
    elif p.phase == "measuring":
        text = f"{pair}: measuring, round {p.rounds_done}/{total or '?'} done"
    else:
        text = f"{pair}: starting…"
    return PairwiseStatus(state=p.phase, running=job.running, text=text, fraction=fraction,
                          result=stored)


def busy_warning(holders: tuple) -> str:
    """The warning before a launch onto a busy device ("" when it is free)."""
    if not holders:
        return ""
    who = sorted({f"study {h.study} (pid {h.pid})" for h in holders})
    return ("The measuring device is busy: " + "; ".join(who) + " is measuring. A comparison "
            "started now waits for it (\"waiting for device\") and measures afterwards.")


def no_comparison_line(winner: dict | None, reference: int, candidate: int) -> str:
    """What to say when no separate comparison of the pair was run: the study's own
    re-validation may already have measured the candidate against the default."""
    from gptuner_core.records.study import Winner

    if winner and reference == 0:
        verdict = Winner.from_json(winner)
        if not verdict.screening and candidate in (verdict.number, verdict.best):
            return (f"#{candidate} was re-validated against #0 by the study itself (the study "
                    "verdict above); no separate comparison of this pair has been run here.")
    return f"#{candidate} has not been re-validated against #{reference} yet."


def relation_line(winner: dict | None, comparison: Comparison) -> str | None:
    """How a comparison of the pair the study verdict decided (a route against the default)
    relates to that verdict when the two disagree; ``None`` when they agree or are about
    different pairs. Both stand: two separate measurements, taken at different times."""
    from gptuner_core.records.confidence import percent
    from gptuner_core.records.study import Winner

    if not winner or comparison.reference != 0 or comparison.verdict == "failed":
        return None
    verdict = Winner.from_json(dict(winner))
    if verdict.screening:
        return None
    if comparison.candidate == verdict.number and verdict.significant:
        said, speedup, ci = "winner", verdict.speedup, verdict.ci
    elif comparison.candidate == verdict.best and not verdict.significant:
        said, speedup, ci = verdict.verdict.value, verdict.best_speedup, verdict.best_ci
    else:
        return None
    if comparison.verdict == said:
        return None
    study_est = "—" if speedup is None else f"{speedup:.3f}x"
    if ci:
        study_est += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    here = "—" if comparison.speedup is None else f"{comparison.speedup:.3f}x"
    return (f"This comparison disagrees with the study verdict on the same pair: the study measured "
            f"#{comparison.candidate} against #0 at {study_est} ({percent(verdict.confidence)} "
            f"confidence, {verdict.rounds} rounds: {said.replace('_', ' ')}); this separate "
            f"measurement, taken later, gives {here} after {comparison.rounds} rounds "
            f"({comparison.verdict.replace('_', ' ')}). Neither replaces the other: the verdict "
            "above is what the study decided. Two such measurements differ when the machine's "
            "state changed between them or the rounds were too few: compare again with more "
            "rounds to settle it.")
