"""Which route is named when re-validation cannot separate the fastest finalists.

Two finalists 1.5 % apart both beat the default; the interleaved rounds do not tell them apart,
so the larger point estimate is timing noise, and re-running the study named the other one.
Among winners the rounds do not separate (``measurement.round_pairs.tie_group``) the study names
the first by one documented order that timing cannot flip (:data:`RULE`):

1. the smaller accuracy loss (the worst per-output loss of the gate, to two significant
   digits, so that a last-digit difference between two runs of one build does not decide);
2. then fewer knobs changed from the default route;
3. then the lower candidate number.

A finalist significantly faster than the others is not in a tie: it is named for its speed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord

RULE = "smaller accuracy loss, then fewer knobs changed from the default, then the lower number"
_WHY = ("smaller accuracy loss", "fewer knobs changed from the default", "lower number")


def _loss(rec: CandidateRecord) -> float:
    losses = [v for v in (rec.accuracy.losses.values() if rec.accuracy else ()) if math.isfinite(v)]
    return float(f"{max(losses):.2g}") if losses else math.inf


def _changed(rec: CandidateRecord, default: CandidateRecord | None) -> int:
    from gptuner_core.errors import GptunerError
    from gptuner_core.routes import Route

    try:
        mine = Route.parse(rec.requested_route)
        base = Route.parse(default.requested_route) if default is not None else Route.parse("")
    except GptunerError:
        return 1 << 30
    return len(mine.diff(base))


@dataclass(frozen=True, slots=True)
class TieOrder:
    """``key(number)`` sorts finalists by :data:`RULE`; ``why`` says which step named one."""

    keys: dict[int, tuple[float, int, int]]

    @classmethod
    def of(cls, history: Sequence[CandidateRecord]) -> TieOrder:
        default = next((r for r in history if r.number == 0), None)
        return cls({r.number: (_loss(r), _changed(r, default), r.number) for r in history})

    def key(self, number: int) -> tuple[float, int, int]:
        return self.keys.get(number, (math.inf, 1 << 30, number))

    def why(self, named: int, others: Sequence[int]) -> str:
        """The step of :data:`RULE` that put ``named`` before the last of ``others`` (each other
        finalist is set apart at the first step where its key differs from ``named``'s)."""
        mine = self.key(named)
        steps = [next((i for i in range(len(_WHY)) if mine[i] != self.key(o)[i]), len(_WHY) - 1)
                 for o in others]
        return _WHY[max(steps, default=len(_WHY) - 1)]

    def reason(self, named: int, tied: Sequence[int], min_effect: float) -> str:
        """``"#4 and #5 tie within 1%: #4 is named (smaller accuracy loss)"`` (``""``: no tie)."""
        if not tied:
            return ""
        routes = sorted([named, *tied])
        names = ", ".join(f"#{n}" for n in routes[:-1]) + f" and #{routes[-1]}"
        return (f"{names} tie within {min_effect * 100:.3g}%: #{named} is named "
                f"({self.why(named, tied)})")
