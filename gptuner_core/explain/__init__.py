"""Why a route wins: knob effects with uncertainty, importance, interactions, failure triage.

Everything here is pure computation over stored candidate records (plus the per-layer profiles
of :mod:`gptuner_core.profiles`); the CLI (``gptuner explain``) and the Explain page render it.
"""

from __future__ import annotations

from gptuner_core.explain.effects import KnobEffect
from gptuner_core.explain.effects import main_effects
from gptuner_core.explain.importance import Interaction
from gptuner_core.explain.importance import KnobImportance
from gptuner_core.explain.importance import importance
from gptuner_core.explain.importance import interactions
from gptuner_core.explain.study import Explanation
from gptuner_core.explain.study import StudyFacts
from gptuner_core.explain.study import explain
from gptuner_core.explain.study import layer_diff
from gptuner_core.explain.study import profile_candidate
from gptuner_core.explain.study import read_study
from gptuner_core.explain.triage import Cause
from gptuner_core.explain.triage import FailureCluster
from gptuner_core.explain.triage import exclusion_expression
from gptuner_core.explain.triage import triage


__all__ = [
    "Cause",
    "Explanation",
    "FailureCluster",
    "Interaction",
    "KnobEffect",
    "KnobImportance",
    "StudyFacts",
    "exclusion_expression",
    "explain",
    "importance",
    "interactions",
    "layer_diff",
    "main_effects",
    "profile_candidate",
    "read_study",
    "triage",
]
