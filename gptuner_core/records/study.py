"""Study-level records: status, progress, the winner decision and the one formatter of it.

A :class:`Winner` renders itself through the texts at the end of this module, used by every surface
(CLI ``show``/``explain``/``tune``, the report, the bundle, every dashboard page, the progress line).

Three texts, from short to long:

* :func:`headline`: one line, the verdict first (``winner: route #5, 2.124x faster ...`` or
  ``no winner: keeping the default (...)``);
* :func:`sentence`: one or two plain sentences: what won or why nothing did, by how much with
  the interval and its confidence, after how many rounds and, when undecided, about how many more
  rounds (or a quieter machine) would decide. No statistical jargon;
* :func:`details`: the method and the tuner's full message, for a details view only.

Screening numbers (one process per route) are never the verdict: :func:`screening_label` names
them as such wherever they are shown after it.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any

from gptuner_core.records.candidate import CandidateRecord


class StudyStatus(str, enum.Enum):
    """Life cycle of a study, as stored in the ``status`` meta.

    ``INTERRUPTED`` is never written by a tuner: it is what readers show for a study stored as
    ``RUNNING`` or ``WAITING`` whose tuner process is gone (see :func:`shown_status`).
    """

    CREATED = "created"
    RUNNING = "running"
    WAITING = "waiting"
    FINISHED = "finished"
    STOPPED = "stopped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"

    @classmethod
    def parse(cls, value: str | StudyStatus | None) -> StudyStatus | None:
        """The enum for a stored value; ``None`` for a missing or unknown one."""
        if isinstance(value, StudyStatus):
            return value
        try:
            return cls(str(value)) if value is not None else None
        except ValueError:
            return None

    def is_active(self) -> bool:
        return self in (StudyStatus.RUNNING, StudyStatus.WAITING)


def shown_status(stored: str | StudyStatus | None, tuner_alive: bool | None) -> str:
    """The status a reader shows: an active study whose tuner is gone is ``interrupted``;
    ``unknown`` when nothing (or something unrecognised) is stored."""
    status = StudyStatus.parse(stored)
    if status is None:
        return "unknown"
    if status.is_active() and tuner_alive is False:
        return StudyStatus.INTERRUPTED.value
    return status.value


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """Where a study stands (the ``progress`` meta and the CLI's progress line).

    ``done`` counts finished candidates (the default route included); ``total`` is the planned
    number, never below ``done``; ``phase`` is ``build``, ``measure``, ``drift``,
    ``revalidation``, ``idle`` or ``done``; ``rounds_done``/``rounds_total`` report
    re-validation rounds; ``heartbeat`` is the wall time of the last update; ``elapsed_s`` the
    tuning time over every run of the study (time budgets cover the whole study); ``waited_s``
    the time spent waiting for a device another study held (never counted as tuning time).
    """

    done: int
    total: int | None = None
    current: str = ""
    phase: str = "idle"
    best_speedup: float | None = None
    eta_s: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    heartbeat: float | None = None
    rounds_done: int | None = None
    rounds_total: int | None = None
    elapsed_s: float = 0.0
    waited_s: float = 0.0
    last: CandidateRecord | None = None

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "last"}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Progress:
        data = data or {}
        names = {f.name for f in dataclasses.fields(cls)} - {"last"}
        kw = {k: v for k, v in data.items() if k in names}
        kw.setdefault("done", 0)
        return cls(**kw)


class Verdict(str, enum.Enum):
    """What the study decided about its best route."""

    WINNER = "winner"  # re-validated: significantly faster than the default route
    NOT_FASTER = "not_faster"  # re-validated: no route is significantly faster
    INCONCLUSIVE = "inconclusive"  # measuring stopped before a decision
    NOT_REVALIDATED = "not_revalidated"  # --revalidate-top-k 0: screening numbers only
    DEFAULT_ONLY = "default_only"  # no eligible route other than the default
    FAILED = "failed"  # re-validation could not measure


@dataclass(frozen=True, slots=True, kw_only=True)
class Winner:
    """The one decision record every surface renders (CLI ``show``, dashboard, sidecar, exports).

    ``number`` is the route the study recommends (the default route, 0, unless a route was shown
    to be faster); ``speedup``/``ci`` belong to ``number``; ``best``/``best_speedup``/``best_ci``
    describe the best contender when it was not chosen; ``rounds`` and ``method`` say how the
    decision was measured; ``screening`` is True when the numbers come from screening only;
    ``projected_rounds`` says, for an inconclusive verdict, how many rounds would decide it;
    ``confidence`` and ``min_effect`` are the re-validation's family-wise level and threshold.
    ``tied``/``tie``: the winners the rounds could not separate from ``number`` and the sentence
    that says which was named and why (:mod:`gptuner_core.engine.decide.ties`).
    For a winner, ``best`` is the winner; otherwise it is the leading contender, with its own
    re-validated speed-up and interval (never another route's). Render it through
    :mod:`gptuner_core.records.verdict_text` (``headline``/``sentence``/``details``).
    """

    verdict: Verdict
    number: int
    speedup: float
    ci: tuple[float, float] | None
    message: str
    best: int | None = None
    best_speedup: float | None = None
    best_ci: tuple[float, float] | None = None
    rounds: int = 0
    method: str = ""
    screening: bool = False
    projected_rounds: int | None = None
    confidence: float = 0.95
    min_effect: float = 0.01
    #: winners the rounds did not separate from ``number`` (named among them by ``tie``'s rule)
    tied: tuple[int, ...] = ()
    #: ``"#4 and #5 tie within 1%: #4 is named (smaller accuracy loss)"`` (``""``: no tie)
    tie: str = ""
    #: an undecided verdict on a busy machine: the share of measurements other programs ran
    #: beside (``None``: not too busy to decide; see ``engine.decide.verdict.too_busy``)
    busy_share: float | None = None

    @property
    def significant(self) -> bool:
        return self.verdict is Verdict.WINNER

    def headline(self) -> str:
        """The one line every surface shows first (:mod:`gptuner_core.records.verdict_text`)."""
        return headline(self)

    def sentence(self) -> str:
        """One or two plain sentences: what won or why nothing did, by how much, how sure."""
        return sentence(self)

    def details(self) -> str:
        """How the verdict was measured (method and the tuner's message): a details view."""
        return details(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "number": self.number,
            "speedup": self.speedup,
            "ci": list(self.ci) if self.ci else None,
            "significant": self.significant,
            "message": self.message,
            "best": self.best,
            "best_speedup": self.best_speedup,
            "best_ci": list(self.best_ci) if self.best_ci else None,
            "rounds": self.rounds,
            "method": self.method,
            "screening": self.screening,
            "projected_rounds": self.projected_rounds,
            "confidence": self.confidence,
            "min_effect": self.min_effect,
            "tied": list(self.tied),
            "tie": self.tie,
            "busy_share": self.busy_share,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Winner:
        verdict = data.get("verdict")
        if verdict is None:  # stored before the verdict field existed
            sig = data.get("significant")
            verdict = "winner" if sig else ("not_revalidated" if sig is None else "not_faster")
        ci = data.get("ci")
        best_ci = data.get("best_ci")
        return cls(
            verdict=Verdict(verdict),
            number=int(data.get("number") or 0),
            speedup=float(data.get("speedup") if data.get("speedup") is not None else 1.0),
            ci=tuple(ci) if ci else None,  # type: ignore[arg-type]
            message=str(data.get("message") or ""),
            best=data.get("best"),
            best_speedup=data.get("best_speedup"),
            best_ci=tuple(best_ci) if best_ci else None,  # type: ignore[arg-type]
            rounds=int(data.get("rounds") or 0),
            method=str(data.get("method") or ""),
            screening=bool(data.get("screening", verdict == "not_revalidated")),
            projected_rounds=data.get("projected_rounds"),
            confidence=float(data.get("confidence") or 0.95),
            min_effect=float(data.get("min_effect") if data.get("min_effect") is not None else 0.01),
            tied=tuple(int(n) for n in data.get("tied") or ()),
            tie=str(data.get("tie") or ""),
            busy_share=data.get("busy_share"),
        )


# --- the one formatter of a Winner (re-exported by records.verdict_text) ---

NO_WINNER = "no winner: keeping the default"
SCREENING = "screening (one process per route, not the verdict)"


def _x(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}x"


def _ci(pair: tuple[float, float] | None) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]" if pair else ""


def _pct(value: float) -> str:
    return f"{value * 100:.3g}%"


def _rounds(n: int) -> str:
    return f"{n} round{'s' if n != 1 else ''}"


#: what a re-validation ended by Stop says (in its message, so in the verdict's sentence too)
CUT_SHORT = "re-validation cut short by a stop request"


def reason(w: Winner) -> str:
    """Why the default is kept, in a few words (``""`` for a winner)."""
    v = w.verdict.value
    if v == "winner":
        return ""
    if v == "inconclusive" and CUT_SHORT in w.message:
        return f"{CUT_SHORT} after {_rounds(w.rounds)}" if w.rounds else CUT_SHORT
    if v == "inconclusive":
        undecided = f"undecided after {_rounds(w.rounds)}" if w.rounds else "undecided"
        return f"{too_busy(w)}; {undecided}" if w.busy_share is not None else undecided
    if v == "not_faster":
        return f"no route is faster by more than {_pct(w.min_effect)}"
    if v == "default_only":
        return "no other eligible route"
    if v == "not_revalidated":
        return "nothing cleared the screening, which was not re-validated"
    return "re-validation failed"


def too_busy(w: Winner) -> str:
    """``the machine was too busy to decide (...): close them and run it again`` (see
    ``engine.decide.verdict.too_busy``)."""
    return (f"the machine was too busy to decide (other programs ran during "
            f"{_pct(w.busy_share or 0.0)} of the measurements): close them and run it again")


def headline(w: Winner) -> str:
    """The one line every surface shows first."""
    if w.verdict.value == "winner":
        rounds = f", after {_rounds(w.rounds)}" if w.rounds else ""
        ci = f" {_ci(w.ci)}" if w.ci else ""
        tie = f" ({w.tie})" if w.tie else ""
        return f"winner: route #{w.number}, {_x(w.speedup)} faster{ci}{rounds}{tie}"
    if w.verdict.value == "not_revalidated" and w.number:
        return (f"screening pick (not re-validated): route #{w.number}, {_x(w.speedup)} "
                f"{_ci(w.ci)}").rstrip()
    return f"{NO_WINNER} ({reason(w)})"


def _leader(w: Winner) -> str:
    """``route #2 measured 1.027x [0.950, 1.110]`` for the best contender (re-validated)."""
    if w.best is None or w.best_speedup is None:
        return ""
    ci = f" {_ci(w.best_ci)}" if w.best_ci else " (too few rounds for an interval)"
    return f"route #{w.best} measured {_x(w.best_speedup)}{ci}"


def sentence(w: Winner) -> str:
    """One or two plain sentences for a person (see the module docstring)."""
    conf = _pct(w.confidence)
    thr = f"{1 + w.min_effect:.3g}x"
    v = w.verdict.value
    if v == "winner":
        ci = f" ({_ci(w.ci)} with {conf} confidence)" if w.ci else ""
        tie = ""
        if w.tied:
            others = " and ".join(f"#{n}" for n in w.tied)
            tie = (f" {others} {'is' if len(w.tied) == 1 else 'are'} as fast within "
                   f"{_pct(w.min_effect)}: the rounds do not separate them, so the tie is named "
                   f"by a fixed rule ({w.tie.rpartition('(')[2].rstrip(')') or 'lower number'} first).")
        return (f"Route #{w.number} is {_x(w.speedup)} faster than the default{ci}, "
                f"re-measured against it in {_rounds(w.rounds)} of fresh processes.{tie}")
    lead = _leader(w)
    if v == "inconclusive" and CUT_SHORT in w.message:
        done = f" after {_rounds(w.rounds)}" if w.rounds else " before its first round"
        return (f"No route was shown faster: re-validation was cut short by a stop request{done}, "
                "so the default is kept. Resume the study to re-validate again.")
    if v == "inconclusive" and not w.rounds:
        return ("No route was re-measured before the time budget ran out, so the default is kept. "
                "A larger --time-budget would let re-validation decide.")
    if v == "inconclusive":
        first = (f"No route was shown faster after {_rounds(w.rounds)} of re-measurement, "
                 "so the default is kept")
        if w.busy_share is not None:
            first = f"{too_busy(w)[0].upper()}{too_busy(w)[1:]}. {first}"
        if lead:
            first += (f": the closest, {lead} with {conf} confidence, neither clears {thr} "
                      "nor rules it out")
        if w.projected_rounds and w.projected_rounds > w.rounds:
            more = (f"About {w.projected_rounds - w.rounds} more rounds "
                    f"({w.projected_rounds} in all), or a quieter machine, would decide.")
        elif lead and w.best_ci:
            more = "More rounds would not decide it: its speed-up sits at the threshold."
        else:
            more = "More rounds, or a quieter machine, are needed to decide."
        return f"{first}. {more}"
    if v == "not_faster":
        tail = f" (the closest, {lead} with {conf} confidence)" if lead else ""
        return (f"No route is faster than the default by more than {_pct(w.min_effect)} after "
                f"{_rounds(w.rounds)} of re-measurement{tail}, so the default is kept.")
    if v == "default_only":
        return "No eligible route other than the default was found, so the default is kept."
    if v == "not_revalidated":
        if w.number:
            return (f"Route #{w.number} screened {_x(w.speedup)} {_ci(w.ci)} in one process per "
                    "route; it was not re-validated (--revalidate-top-k 0), so treat it as a lead.")
        return (f"The best screened route, #{w.best}, measured {_x(w.best_speedup)}, which does "
                f"not clear {thr}; nothing was re-validated, so the default is kept.")
    return f"Re-validation could not measure ({w.message}), so the default is kept."


def details(w: Winner) -> str:
    """How the verdict was measured (method, the tuner's full message): a details view only."""
    parts = [p for p in (w.method, w.message) if p]
    return "; ".join(parts)


def screening_label(speedup: float | None, ci: tuple[float, float] | None = None) -> str:
    """``screening 1.212x (one process per route, not the verdict)``."""
    spread = f" {_ci(ci)}" if ci else ""
    return f"screening {_x(speedup)}{spread} (one process per route, not the verdict)"


def recommended(winner: dict | None) -> int | None:
    """The route a stored verdict (``winner`` meta) recommends over the default, else ``None``:
    what a chart may star as the winner (the default is never drawn as one)."""
    if not winner:
        return None
    verdict = winner.get("verdict") or ("winner" if winner.get("significant") else "")
    number = int(winner.get("number") or 0)
    return number if verdict in ("winner", "not_revalidated") and number else None
