"""One route measured for one round of an interleaved re-validation.

Every round-based decision (the study's verdict in ``finish``, the per-shape verdict,
``gptuner revalidate``, the regression gate, a re-tune's hold check) measures a route the same
way: in a fresh process, with the study's sampling settings scaled by :data:`ROUND_SCALE`.

The unit of evidence in a round is the per-process median, and what narrows a speed-up interval
is the number of rounds: the spread between processes (about 4 % between fresh ONNX Runtime
processes on the 2-vCPU machine, regimes up to 1.7x apart on the H200's launch-bound torch
sample) is far wider than the precision one process reaches. So a round's process keeps the
screening's precision target but a quarter of its sample and time caps (``max_time_s`` 10 s ->
2.5 s): under load, where a process never reaches the target, a round no longer costs the
whole screening budget per route.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    from gptuner_core.engine.evaluator import Evaluator
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import ChildResult

#: the share of the screening budget (samples and time) one round's process gets
ROUND_SCALE = 0.25


def measure_round(evaluator: Evaluator, record: CandidateRecord, purpose: str) -> ChildResult:
    """Measure ``record`` once more in a fresh process, in the work folder ``purpose``."""
    return evaluator.remeasure(record, purpose, ROUND_SCALE)


def round_samples(
    evaluator: Evaluator, record: CandidateRecord, purpose: str, who: str, *, see: object = None
) -> list[float]:
    """The samples of :func:`measure_round`; a failed or empty measurement raises
    ``BackendError("re-measurement of <who> failed (<cause>; see <purpose>/log.txt)")``
    (``see``: the folder to name instead of ``purpose``)."""
    res = measure_round(evaluator, record, purpose)
    if not res.ok or not res.samples_ms:
        msg = f"re-measurement of {who} failed ({res.error or 'no samples'}; see {see or purpose}/log.txt)"
        raise BackendError(msg)
    return list(res.samples_ms)
