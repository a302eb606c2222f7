"""gptuner: a build-route tuner for TensorRT's Global Performance Tuner (and friends)."""

from __future__ import annotations

from gptuner_core.errors import GptunerError
from gptuner_core.knobs import Knob
from gptuner_core.knobs import KnobDatabase
from gptuner_core.knobs import diff_knob_databases
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.routes import Route


__version__ = "0.1.0"

__all__ = [
    "CandidateRecord",
    "CandidateState",
    "GptunerError",
    "Knob",
    "KnobDatabase",
    "Route",
    "__version__",
    "diff_knob_databases",
]
