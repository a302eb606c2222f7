"""The one formatter of a study's :class:`~gptuner_core.records.study.Winner`: its texts live in
:mod:`gptuner_core.records.study` beside the record (a Winner renders itself, so the two were one
import circle); this module keeps the names its importers use."""

from __future__ import annotations

from gptuner_core.records.study import CUT_SHORT
from gptuner_core.records.study import NO_WINNER
from gptuner_core.records.study import SCREENING
from gptuner_core.records.study import details
from gptuner_core.records.study import headline
from gptuner_core.records.study import reason
from gptuner_core.records.study import recommended
from gptuner_core.records.study import screening_label
from gptuner_core.records.study import sentence
from gptuner_core.records.study import too_busy


__all__ = [
    "CUT_SHORT",
    "NO_WINNER",
    "SCREENING",
    "details",
    "headline",
    "reason",
    "recommended",
    "screening_label",
    "sentence",
    "too_busy",
]
