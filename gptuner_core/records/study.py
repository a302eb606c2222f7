"""Study-level records: status, progress, the winner decision."""

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
    #: the rounds were answered from a recording (the replay backend): nothing ran, so the
    #: verdict says "the recording's samples", never "fresh processes"
    replayed: bool = False

    @property
    def significant(self) -> bool:
        return self.verdict is Verdict.WINNER

    def headline(self) -> str:
        """The one line every surface shows first (:mod:`gptuner_core.records.verdict_text`)."""
        from gptuner_core.records.verdict_text import headline

        return headline(self)

    def sentence(self) -> str:
        """One or two plain sentences: what won or why nothing did, by how much, how sure."""
        from gptuner_core.records.verdict_text import sentence

        return sentence(self)

    def details(self) -> str:
        """How the verdict was measured (method and the tuner's message): a details view."""
        from gptuner_core.records.verdict_text import details

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
            "replayed": self.replayed,
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
            replayed=bool(data.get("replayed", False)),
        )
