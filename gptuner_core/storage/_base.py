"""The study store contract.

Concurrency: exactly one writer (the tuner process) per study; any number of read-only readers
(the dashboard, ``gptuner show``). A reader never blocks the writer. Every ``put_candidate`` is
durable when it returns (committed at once), so a SIGKILL never loses a finished candidate and
never leaves a half-written one. Records returned are snapshots: later writes do not change them.

Layout of a study folder::

    STUDY/study.sqlite        the store
    STUDY/candidates/NNNNN/   artifact(s), candidate log, outputs
    STUDY/golden.npz          reference outputs for the accuracy gate
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import Progress
    from gptuner_core.records import StudyStatus
    from gptuner_core.records import Winner


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """A timestamped study event: ``"baseline"`` (drift sentinel), ``"revalidation"``,
    ``"force"`` (fingerprint override), ``"status"``, ``"warning"``..."""

    id: int
    time: float
    kind: str
    payload: dict[str, Any]


class StudyStore(abc.ABC):
    """Small store API; one contract test suite runs over every implementation."""

    readonly: bool

    # -- study header ----------------------------------------------------------------------
    @abc.abstractmethod
    def init_study(self, config: dict[str, Any], fingerprint: dict[str, Any]) -> None:
        """Record a new study's configuration and fingerprint (once; error if already set)."""

    @abc.abstractmethod
    def config(self) -> dict[str, Any]:
        """The study configuration (JSON dict) recorded by :meth:`init_study`."""

    @abc.abstractmethod
    def fingerprint(self) -> dict[str, Any]:
        """The fingerprint recorded by :meth:`init_study` (or the latest forced one)."""

    @abc.abstractmethod
    def set_fingerprint(self, fingerprint: dict[str, Any]) -> None:
        """Replace the fingerprint (used by ``--force``; callers also record a ``force`` event)."""

    @abc.abstractmethod
    def set_meta(self, key: str, value: Any) -> None:
        """Set a JSON-able value (status, pid, progress, winner...), committed at once."""

    @abc.abstractmethod
    def get_meta(self, key: str, default: Any = None) -> Any:
        """Read a value set by :meth:`set_meta`."""

    # -- candidates ------------------------------------------------------------------------
    @abc.abstractmethod
    def put_candidate(self, record: CandidateRecord) -> None:
        """Insert or replace the candidate with ``record.number``; durable on return."""

    @abc.abstractmethod
    def candidates(self, *, with_samples: bool = False) -> list[CandidateRecord]:
        """All candidates ordered by number; raw samples only when asked (they are large)."""

    @abc.abstractmethod
    def candidate(self, number: int) -> CandidateRecord | None:
        """One candidate with its raw samples, or ``None``."""

    def best_median_ms(self) -> float | None:
        """The lowest median latency (ms) of a candidate that passed (``COMPLETE``): the
        study's best value, without reading the records where the store can."""
        timed = [r.latency.median_ms for r in self.candidates()
                 if r.state.value == "COMPLETE" and r.latency is not None]
        return min(timed) if timed else None

    def state_counts(self) -> dict[str, int]:
        """How many candidates are in each state (``CandidateState`` values); stores may answer
        without reading the records (the dashboard's study list)."""
        counts: dict[str, int] = {}
        for r in self.candidates():
            counts[r.state.value] = counts.get(r.state.value, 0) + 1
        return counts

    @abc.abstractmethod
    def delete_unfinished(self, also: tuple[int, ...] = ()) -> list[int]:
        """Remove PENDING/RUNNING candidates (left by a kill), and the numbers in ``also`` (to
        be run again); return their numbers."""

    # -- events ----------------------------------------------------------------------------
    @abc.abstractmethod
    def add_event(self, kind: str, payload: dict[str, Any]) -> None:
        """Append an event, committed at once."""

    @abc.abstractmethod
    def events(self, kind: str | None = None) -> list[Event]:
        """Events in insertion order, optionally of one kind."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close connections."""

    # -- typed meta (the keys every part of gptuner reads and writes) ------------------------
    def status(self) -> StudyStatus | None:
        """The stored study status (``None`` when missing or unknown)."""
        from gptuner_core.records import StudyStatus

        return StudyStatus.parse(self.get_meta("status"))

    def set_status(self, status: StudyStatus, message: str | None = None) -> None:
        self.set_meta("status", status.value)
        if message is not None:
            self.set_meta("status_message", message)

    def progress(self) -> Progress:
        from gptuner_core.records import Progress

        return Progress.from_json(self.get_meta("progress"))

    def set_progress(self, progress: Progress) -> None:
        self.set_meta("progress", progress.to_json())

    def winner(self) -> Winner | None:
        """The study's one decision record, if it has one."""
        from gptuner_core.records import Winner

        data = self.get_meta("winner")
        return Winner.from_json(data) if isinstance(data, dict) else None

    def set_winner(self, winner: Winner) -> None:
        self.set_meta("winner", winner.to_json())

    def __enter__(self) -> StudyStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
