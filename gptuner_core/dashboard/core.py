"""What the pages (``app_pages/``) use of the rest of ``gptuner_core``, in one place: the pages
import only ``gptuner_core.dashboard`` and ``gptuner_core.views`` (issue 42; checked by
``tests/test_package.py``), so this module is the one seam between a page and the engine."""

from __future__ import annotations

from gptuner_core.config import METRICS
from gptuner_core.config import StudyConfig
from gptuner_core.engine.decide import pairwise
from gptuner_core.engine.decide import pairwise_jobs
from gptuner_core.engine.process.launch import is_running
from gptuner_core.errors import GptunerError
from gptuner_core.expressions import dry_run_lines
from gptuner_core.knobs import KnobDatabase
from gptuner_core.knobs import diff_knob_databases
from gptuner_core.records.confidence import percent
from gptuner_core.records.verdict_text import recommended
from gptuner_core.study_code import code_references
from gptuner_core.study_code import stored_config


__all__ = [
    "METRICS",
    "GptunerError",
    "KnobDatabase",
    "StudyConfig",
    "code_references",
    "diff_knob_databases",
    "dry_run_lines",
    "is_running",
    "pairwise",
    "pairwise_jobs",
    "percent",
    "recommended",
    "stored_config",
]
