"""``mixed_noise``: trtexec's ``mixed`` where a knob is positive only if its gain is significant.

A one-off variant makes its knob positive when the lower bound of its speed-up confidence
interval (``CandidateRecord.speedup_ci``, from the measurement layer) exceeds ``min_speedup``
(1.0 by default); records without a CI fall back to the point speed-up (``speedup``, or baseline
median / median). Variants that failed the accuracy gate never count (unlike trtexec), so phase 2
does not spend builds on knobs that only win by breaking the model. Noise makes trtexec's strict
"faster than baseline" test count about half of the no-op knobs as positive, which inflates
phase 2 exponentially; this version keeps phase 2 small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._base import latency_of
from gptuner_core.strategies.mixed import MixedStrategy


if TYPE_CHECKING:
    from gptuner_core.records import CandidateRecord


class MixedNoiseStrategy(MixedStrategy):
    name = "mixed_noise"
    summary = (
        "Noise-aware mixed: phase 2 only over knobs whose one-off speed-up is significant "
        "(CI lower bound > min_speedup; point speed-up when no CI); accuracy failures never count."
    )
    options = {
        "min_speedup": StrategyOption(
            description="a one-off must beat the baseline by more than this factor (CI lower bound)",
            default=1.0,
            type=float,
            minimum=0.0,
        ),
    }

    def is_positive(self, record: CandidateRecord | None, base: CandidateRecord) -> bool:
        if record is None or not record.eligible:
            return False
        threshold = self.opts["min_speedup"]
        if record.speedup_ci is not None:
            return record.speedup_ci[0] > threshold
        lat, base_lat = latency_of(record), latency_of(base)
        if record.speedup is not None:
            return record.speedup > threshold
        return lat is not None and base_lat is not None and base_lat / lat > threshold
