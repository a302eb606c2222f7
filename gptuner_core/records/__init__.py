"""Frozen records shared by the engine, the store, the strategies and the dashboard.

Failure is a state (:class:`CandidateState`), never a magic key. Every record round-trips through
``to_json()`` / ``from_json()`` (plain JSON-able dicts).
"""

from __future__ import annotations

from gptuner_core.records.candidate import AccuracyResult
from gptuner_core.records.candidate import CandidateRecord
from gptuner_core.records.candidate import CandidateState
from gptuner_core.records.candidate import LatencyStats
from gptuner_core.records.child import ChildJob
from gptuner_core.records.child import ChildResult
from gptuner_core.records.child import ShapeLatency
from gptuner_core.records.child import state_of_status
from gptuner_core.records.study import Progress
from gptuner_core.records.study import StudyStatus
from gptuner_core.records.study import Verdict
from gptuner_core.records.study import Winner
from gptuner_core.records.study import shown_status


__all__ = [
    "AccuracyResult",
    "CandidateRecord",
    "CandidateState",
    "ChildJob",
    "ChildResult",
    "LatencyStats",
    "Progress",
    "ShapeLatency",
    "StudyStatus",
    "Verdict",
    "Winner",
    "shown_status",
    "state_of_status",
]
