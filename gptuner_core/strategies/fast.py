"""``fast``: trtexec's default search, the baseline then one-off variants.

Order (``shared/reference/tensorrt-gpt.md`` §2.3): index 0 is the baseline; then knobs right to
left (last knob first), each knob's listed values in order, the database default skipped.
Count ``1 + Σ (#values ≠ default)``. Routes already evaluated in the study are skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord


class EnumerationStrategy(Strategy):
    """Walk ``space.iter_routes(search)`` in trtexec order, skipping evaluated routes."""

    search = "fast"

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(space, **kw)
        self._iter = enumerate(space.iter_routes(self.search))

    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        first = self.prelude(history, pending)
        if first is not None:
            return first
        seen = self.taken(history, pending)
        for index, route in self._iter:
            if self.key(route) not in seen:
                return Proposal(route=route, info={"phase": 1, "search": self.search, "index": index})
        return None

    def planned(self) -> int | None:
        return self.space.count(self.search) + len(self.warm_start)


class FastStrategy(EnumerationStrategy):
    name = "fast"
    summary = (
        "trtexec's default: the baseline, then every one-off variant (one knob changed at a "
        "time, last knob first). Linear in the number of values."
    )
    options = {}
    search = "fast"
