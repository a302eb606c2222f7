"""Workspace overview and live-progress views (plain dicts in, DataFrames / dicts out)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import pandas as pd

    from gptuner_core.records import CandidateRecord

STALE_KEYS = (
    "model_sha256",
    "backend_version",
    "device",
    "driver",
    "runtime",
    "cpu_features",
    "host",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StudySummary:
    """One row of the overview table."""

    name: str
    status: str
    model: str
    backend: str
    search: str
    done: int
    total: int | None
    best_speedup: float | None
    best_ci: tuple[float, float] | None
    winner_number: int | None
    verdict: str = ""
    significant: bool | None
    stale: str
    message: str = ""
    lineage: str = ""
    best_ms: float | None = None  # best value: the lowest median latency of a passing candidate


def lineage_text(config: Mapping[str, Any], meta: Mapping[str, Any]) -> str:
    """Where a study came from: ``gptuner retune``'s recorded parent (and whether the old winner
    held), and the studies it was warm-started from; ``""`` for a fresh study."""
    from pathlib import Path

    parts = []
    lineage = meta.get("lineage") or {}
    if isinstance(lineage, dict) and lineage.get("from"):
        holds = lineage.get("old_winner_holds")
        held = "" if holds is None else f" (old winner {'holds' if holds else 'does not hold'})"
        parts.append(f"re-tuned from {Path(str(lineage['from'])).name}{held}")
    warm = [Path(str(w)).name for w in (config.get("warm_start") or ())]
    if warm:
        parts.append("warm-started from " + ", ".join(warm))
    return "; ".join(parts)


def stale_reasons(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """``"key: recorded -> now"`` for each fingerprint key known on both sides that differs."""
    out = []
    for key in STALE_KEYS:
        if key in current and key in recorded and str(recorded[key]) != str(current[key]):
            out.append(f"{key}: {_short(recorded[key])} → {_short(current[key])}")
    return out


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 24 else text[:10] + "…" + text[-8:]


def effective_status(status: str | None, pid_alive: bool | None) -> str:
    """The status to show: a ``running`` study whose tuner process is gone is ``interrupted``."""
    status = status or "unknown"
    if status in ("running", "waiting") and pid_alive is False:
        return "interrupted"
    return status


def study_summary(
    name: str,
    *,
    config: Mapping[str, Any],
    meta: Mapping[str, Any],
    n_finished: int,
    stale: Sequence[str] = (),
    pid_alive: bool | None = None,
    best_ms: float | None = None,
) -> StudySummary:
    """Combine a study's config, meta values (status, progress, winner) and counts."""
    progress = meta.get("progress") or {}
    win = meta.get("winner") or {}
    ci = win.get("ci")
    return StudySummary(
        name=name,
        status=effective_status(meta.get("status"), pid_alive),
        model=str(config.get("model", "?")).rsplit("/", 1)[-1],
        backend=str(config.get("backend", "?")),
        search=str(config.get("search", "?")),
        done=int(progress.get("done", n_finished) or n_finished),
        total=progress.get("total"),
        best_speedup=win.get("speedup"),
        best_ci=tuple(ci) if ci else None,
        winner_number=win.get("number"),
        significant=win.get("significant"),
        verdict=_headline(win),
        stale="; ".join(stale) if stale else "",
        message=str(meta.get("status_message") or win.get("message") or ""),
        lineage=lineage_text(config, meta),
        best_ms=best_ms,
    )


def _headline(win: Mapping[str, Any]) -> str:
    from gptuner_core.records import Winner

    return Winner.from_json(dict(win)).headline() if win else ""


def studies_frame(summaries: Sequence[StudySummary]) -> pd.DataFrame:
    """The overview table, newest first as given."""
    import pandas as pd

    rows = []
    for s in summaries:
        best = s.verdict or "—"  # the verdict, never the screening best
        rows.append(
            {
                "study": s.name,
                "status": s.status,
                "model": s.model,
                "backend": s.backend,
                "search": s.search,
                "candidates": f"{s.done}/{s.total}" if s.total else str(s.done),
                "best ms": s.best_ms,
                "verdict": best,
                "stale": f"⚠ {s.stale}" if s.stale else "",
                "lineage": s.lineage,
                "message": s.message,
            }
        )
    # the verdict and the numbers first: after the provenance columns they were cut or
    # off-screen (issue 39 item 9)
    cols = ["study", "status", "verdict", "candidates", "best ms", "model", "backend", "search",
            "stale", "lineage", "message"]
    return pd.DataFrame(rows, columns=cols)


#: the Overview grid's columns: the verdict and its numbers, each column as wide as its longest
#: value, which fit a 1400 px window; what each study ran on and the long texts (why it is stale,
#: its lineage, its status message) go to :func:`study_notes` (with them the grid was 1,500 px
#: wide: the verdict cut, later columns off-screen)
STUDY_GRID = ("study", "status", "verdict", "candidates", "best ms")
NOTE_COLUMNS = ("model", "backend", "search", "stale", "lineage", "message")


def study_notes(table: pd.DataFrame) -> pd.DataFrame:
    """Each study's other columns (those any study fills), one row per study, for a wrapped
    table."""
    present = [c for c in NOTE_COLUMNS if c in table and (table[c].fillna("") != "").any()]
    return table[["study", *present]].reset_index(drop=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveProgress:
    fraction: float
    text: str
    eta: str
    current: str
    phase: str


def _duration(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "—"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


def revalidation_progress(dir_names: Sequence[str], *, top_k: int, rounds: int) -> tuple[int, int]:
    """``(measurements done, planned)`` of the re-validation from its work folders
    (``STUDY/revalidation/r<round>_<number>``): top k finalists plus the default, at least two
    rounds (the tuner's rule)."""
    done = sum(1 for n in dir_names if n.startswith("r") and "_" in n)
    planned = (max(int(top_k), 0) + 1) * max(int(rounds), 2)
    return done, max(planned, done)


#: statuses of a study whose tuner exited before the end: its phase is that status, never "done",
#: and Live offers to resume it
UNFINISHED = ("stopped", "interrupted", "failed")


def landed(records: Sequence[Any]) -> int:
    """Candidates that have landed (a result, failed or not): the one in flight is not one."""
    return sum(1 for r in records if r.state.is_finished())


def live_progress(
    progress: Mapping[str, Any] | None,
    *,
    now: float | None = None,
    n_recorded: int | None = None,
    status: str | None = None,
    revalidation: tuple[int, int] | None = None,
) -> LiveProgress:
    """Progress bar fraction, ``done/total`` text, ETA and elapsed from the ``progress`` meta.

    ``n_recorded`` (candidates in the store) keeps ``done`` right after a resume, before the
    tuner reports, and a total below it is shown as "at least": never ``12/8``. While a running
    study has evaluated everything it planned, the phase is the re-validation of the finalists
    (``revalidation`` = measurements done, planned), not "idle".
    """
    p = dict(progress or {})
    done = int(p.get("done") or 0)
    if n_recorded is not None:
        done = max(done, int(n_recorded))
    total = p.get("total")
    fraction = min(1.0, done / total) if total else 0.0
    started = p.get("started_at")
    end = p.get("finished_at") or now or time.time()  # a finished study's clock stops
    elapsed = end - started if started else None
    if total and done > total:
        text = f"{done} routes (plan of {total} exceeded: resumed or re-planned)"
    else:
        text = f"{done}/{total} routes" if total else f"{done} route{'' if done == 1 else 's'}"
    if elapsed is not None:
        text += f" · elapsed {_duration(elapsed)}"
    current = p.get("current")
    phase = str(p.get("phase") or "—")
    eta = _duration(p.get("eta_s"))
    rounds_total = p.get("rounds_total")
    if status == "waiting":  # a state of its own: no candidate runs, no ETA runs down
        phase, eta = "waiting for the device", "—"
        waited = p.get("waited_s")
        text = f"waiting for the device (not counted as tuning time) · {text}" + (
            f" · waited {_duration(waited)} so far" if waited else "")
    if phase == "revalidation":  # the tuner reports its re-validation rounds itself
        eta = "—"
        screened = text.replace(" routes", " routes screened", 1)
        text = f"re-validating the finalists in fresh processes · {text}"
        if rounds_total:
            done_rounds = int(p.get("rounds_done") or 0)
            phase = f"re-validation round {done_rounds}/{rounds_total}"
            fraction = min(1.0, done_rounds / rounds_total)
            # the bar is the rounds: say so beside the screening count; the rounds left are the
            # most it can take (a route decided early ends it sooner), not a time
            left = max(int(rounds_total) - done_rounds, 0)
            text = (f"re-validating the finalists in fresh processes: round {done_rounds}/"
                    f"{rounds_total} · {screened}")
            eta = f"at most {left} round{'' if left == 1 else 's'}"
        else:
            phase = "re-validation"
    elif status == "running" and phase in ("idle", "—", "") and total and done >= total:
        phase = "re-validation"
        eta = "—"
        if revalidation is not None:
            phase = f"re-validation {revalidation[0]}/{revalidation[1]} measurements"
            fraction = min(1.0, revalidation[0] / revalidation[1]) if revalidation[1] else fraction
            text = f"re-validating the finalists in fresh processes · {text}"
    if status in UNFINISHED:  # the tuner reports "done" at every exit, stopped or not
        phase, eta = str(status), "—"
    return LiveProgress(
        fraction=fraction,
        text=text,
        eta=eta,
        current="—" if current is None or current == "" else str(current),
        phase=phase,
    )


def recent_failures(records: Sequence[CandidateRecord], n: int = 5) -> pd.DataFrame:
    """The last ``n`` candidates that failed (build/crash/timeout/accuracy), newest first."""
    import pandas as pd

    rows = [
        {"number": r.number, "state": r.state.value, "route": r.requested_route,
         "error": (r.error or "")[:300]}
        for r in reversed(records)
        if r.state.is_failure() or r.state.value == "ACCURACY_FAILED"
    ][:n]
    return pd.DataFrame(rows, columns=["number", "state", "route", "error"])
