"""Records of "is A faster than B?": the stored comparison and a background run's progress.

:class:`Comparison` is the one record the CLI (``gptuner revalidate STUDY A B``) prints and the
Compare page renders; it is stored as the study's ``pairwise`` event. :class:`PairwiseProgress`
is what a background comparison (started from Compare) writes to ``STUDY/pairwise/<run>/state.json``
while it waits for the device and measures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gptuner_core.records.confidence import percent
from gptuner_core.records.undecided import more_rounds


#: the outcomes of a comparison (B against the reference A)
OUTCOMES = ("winner", "not_faster", "inconclusive", "failed")
#: the life cycle of a background comparison
PHASES = ("starting", "waiting", "measuring", "done", "failed")


def _pair(value: Any) -> tuple[float, float] | None:
    return (float(value[0]), float(value[1])) if value else None


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """Candidate ``candidate`` (B) measured against ``reference`` (A) in interleaved rounds.

    ``speedup`` is ``latency(A) / latency(B)`` over the per-process medians of paired rounds
    (> 1: B is faster); ``ci`` its interval at ``confidence``; ``verdict`` one of
    :data:`OUTCOMES`: B decided faster than A by more than ``min_effect`` (``winner``), decided
    not faster (``not_faster``), the round budget spent first (``inconclusive``, with
    ``projected_rounds``), or B/A could not be re-measured (``failed``, with ``error``).
    """

    reference: int
    candidate: int
    verdict: str
    speedup: float | None
    ci: tuple[float, float] | None
    rounds: int
    max_rounds: int
    method: str
    min_effect: float
    confidence: float = 0.95
    stop_reason: str = ""
    projected_rounds: int | None = None
    error: str = ""
    elapsed_s: float = 0.0
    finished_at: float | None = None

    def headline(self) -> str:
        """``#B vs #A: <verdict>: 1.234x [1.100, 1.380] after N rounds`` (CLI and Compare)."""
        point = f"{self.speedup:.3f}x" if self.speedup is not None else "-"
        ci = f" [{self.ci[0]:.3f}, {self.ci[1]:.3f}]" if self.ci else ""
        return (f"#{self.candidate} vs #{self.reference}: {self.verdict}: {point}{ci} "
                f"after {self.rounds} rounds")

    def sentence(self) -> str:
        """The verdict in plain words."""
        a, b = f"#{self.reference}", f"#{self.candidate}"
        pct = f"{self.min_effect * 100:g}%"
        est = "-" if self.speedup is None else f"{self.speedup:.3f}x"
        if self.ci:
            est += f", {percent(self.confidence)} CI [{self.ci[0]:.3f}, {self.ci[1]:.3f}]"
        how = f"{self.rounds} interleaved rounds in fresh processes"
        if self.verdict == "winner":
            return f"{b} is faster than {a} by more than {pct}: {est} ({how})"
        if self.verdict == "not_faster":
            return f"{b} is not faster than {a} by more than {pct}: {est} ({how})"
        if self.verdict == "failed":
            return f"{b} vs {a} could not be measured: {self.error or 'no samples'}"
        why = {"max_rounds": "round budget spent", "max_time": "time budget spent"}.get(
            self.stop_reason, self.stop_reason or "stopped")
        more = more_rounds(self.projected_rounds, bool(self.ci))
        return (f"undecided after {self.rounds} rounds ({why}): {b} against {a} {est} neither "
                f"clears {1 + self.min_effect:.3g}x nor rules it out; {more}")

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference, "candidate": self.candidate, "verdict": self.verdict,
            "speedup": self.speedup, "ci": list(self.ci) if self.ci else None,
            "rounds": self.rounds, "max_rounds": self.max_rounds, "method": self.method,
            "min_effect": self.min_effect, "confidence": self.confidence,
            "stop_reason": self.stop_reason, "projected_rounds": self.projected_rounds,
            "error": self.error, "elapsed_s": self.elapsed_s, "finished_at": self.finished_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Comparison:
        return cls(
            reference=int(data["reference"]), candidate=int(data["candidate"]),
            verdict=str(data["verdict"]),
            speedup=None if data.get("speedup") is None else float(data["speedup"]),
            ci=_pair(data.get("ci")), rounds=int(data.get("rounds") or 0),
            max_rounds=int(data.get("max_rounds") or 0), method=str(data.get("method") or ""),
            min_effect=float(data.get("min_effect") or 0.0),
            confidence=float(data.get("confidence") or 0.95),
            stop_reason=str(data.get("stop_reason") or ""),
            projected_rounds=data.get("projected_rounds"), error=str(data.get("error") or ""),
            elapsed_s=float(data.get("elapsed_s") or 0.0), finished_at=data.get("finished_at"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PairwiseProgress:
    """A background comparison's state: ``phase`` (:data:`PHASES`), rounds, a message, its pid."""

    reference: int
    candidate: int
    phase: str
    rounds_done: int = 0
    max_rounds: int = 0
    message: str = ""
    pid: int | None = None
    updated_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"reference": self.reference, "candidate": self.candidate, "phase": self.phase,
                "rounds_done": self.rounds_done, "max_rounds": self.max_rounds,
                "message": self.message, "pid": self.pid, "updated_at": self.updated_at}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PairwiseProgress:
        return cls(reference=int(data["reference"]), candidate=int(data["candidate"]),
                   phase=str(data["phase"]), rounds_done=int(data.get("rounds_done") or 0),
                   max_rounds=int(data.get("max_rounds") or 0),
                   message=str(data.get("message") or ""), pid=data.get("pid"),
                   updated_at=data.get("updated_at"))
