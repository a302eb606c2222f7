"""The evaluator's seam types, below the evaluator, the rounds and the round prefetch (which all
name them, so none of the three imports another just for a type): what the loop asks of whatever
answers proposals (:class:`Evaluator`), the narrow view of a study an evaluator needs
(:class:`StudyContext`) and what a round prefetch needs of the evaluator that owns it
(:class:`RoundRunner`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Protocol


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Sequence
    from pathlib import Path

    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.files.inputs import StudyInputs
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import ChildJob
    from gptuner_core.records import ChildResult
    from gptuner_core.strategies import Proposal


class Evaluator(Protocol):
    """What the loop needs from whatever answers proposals."""

    def evaluate(
        self, proposal: Proposal, number: int, history: Sequence[CandidateRecord],
        artifacts: dict[str, int], on_phase: Callable[[str], None],
    ) -> CandidateRecord:
        """Build, gate and measure ``proposal`` as candidate ``number``; never raises for a
        problem of that candidate (it becomes the record's state and error)."""

    def remeasure(self, record: CandidateRecord, purpose: str, scale: float = 1.0) -> ChildResult:
        """Measure an existing candidate again in a fresh process (drift, racing,
        re-validation); ``purpose`` names the work folder (``baseline/00012``, ``r3``...)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyContext:
    """The narrow view of a study the evaluator needs (instead of the whole tuner)."""

    config: StudyConfig
    workspace: StudyWorkspace
    inputs: StudyInputs


class RoundRunner(Protocol):
    """What :class:`~gptuner_core.engine.evaluate.round_prefetch.RoundPrefetch` needs of the
    evaluator that owns it (:class:`~gptuner_core.engine.evaluate.evaluator.IsolatedEvaluator`):
    the study, a re-measurement job, its time limits and the isolated run."""

    @property
    def ctx(self) -> StudyContext: ...

    def remeasure_job(self, record: CandidateRecord, scale: float = 1.0) -> ChildJob: ...

    def _timeouts(self, build_timeout: float | None = None) -> dict[str, float]: ...

    def _run(self, target: str, job: ChildJob, workdir: Path, timeouts: dict[str, float],
             on_phase: Callable[[str], None] | None = None) -> ChildResult: ...
