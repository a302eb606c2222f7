"""``mixed``: trtexec's two-phase search.

Phase 1 is ``fast``. Phase 2 is ``full`` over the *positive* knobs (all their listed values) with
every other knob pinned to its baseline value (:func:`gptuner_core.expressions.mixed_phase2`). As in
trtexec (``positiveKnobs.size() > 1``, one entry per positive *variant*), it runs when more than
one one-off *variant* is positive: a single knob with two faster values is enough. A variant is
positive when it did not crash, has a latency and is faster than the baseline (trtexec does not check accuracy:
``count_accuracy_failed`` keeps that quirk by default). Unlike trtexec, phase-2 routes already
evaluated (in phase 1 or an earlier run) are skipped instead of being built again.

Phase 2 is decided once every phase-1 route has a record in the history: with phase-1 proposals
still in flight, ``ask`` answers ``None`` (wait) until they are told.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.expressions import mixed_phase2
from gptuner_core.records import CandidateState
from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy
from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._base import latency_of


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord
    from gptuner_core.routes import Route


class MixedStrategy(Strategy):
    name = "mixed"
    summary = (
        "trtexec's 'mixed': phase 1 = fast; phase 2 = full over the knobs whose one-off "
        "variant beat the baseline (only if more than one did), others pinned to baseline."
    )
    options = {
        "count_accuracy_failed": StrategyOption(
            description=(
                "count a faster one-off that failed the accuracy gate as positive "
                "(trtexec does)"
            ),
            default=True,
            type=bool,
        ),
    }

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(space, **kw)
        self._phase1 = list(space.iter_routes("fast")) if space.count("fast") < 1_000_000 else None
        self._p1_index = 0
        self._phase2: Iterator[Route] | None = None
        self._phase2_done = False
        self.positive_knobs: tuple[str, ...] | None = None
        self.positive_variants: tuple[tuple[str, str], ...] = ()

    # -- positivity ------------------------------------------------------------------------
    def is_positive(self, record: CandidateRecord | None, base: CandidateRecord) -> bool:
        """trtexec: not crashed, latency > 0 and faster than iteration 0."""
        if record is None:
            return False
        if record.state is CandidateState.ACCURACY_FAILED and not self.opts.get(
            "count_accuracy_failed", True
        ):
            return False
        lat, base_lat = latency_of(record), latency_of(base)
        return lat is not None and base_lat is not None and lat < base_lat

    def find_positive_variants(self, history: Sequence[CandidateRecord]) -> tuple[tuple[str, str], ...]:
        """Positive one-off variants ``(knob, value)`` in phase-1 order (trtexec's list)."""
        records = self.by_key(history)
        base = records.get(self.key(self.space.baseline()))
        if base is None or latency_of(base) is None:
            return ()
        out = []
        for index in range(1, self.space.count("fast")):
            varied = self.space.varied_at(index)
            assert varied is not None
            route = self.space.route_at("fast", index)
            if self.is_positive(records.get(self.key(route)), base):
                out.append(varied)
        return tuple(out)

    def find_positive(self, history: Sequence[CandidateRecord]) -> tuple[str, ...]:
        """Knobs (expression order) with at least one positive one-off variant."""
        names = {k for k, _ in self.find_positive_variants(history)}
        return tuple(n for n in self.space.names if n in names)

    # -- ask -------------------------------------------------------------------------------
    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        first = self.prelude(history, pending)
        if first is not None:
            return first
        seen = self.taken(history, pending)
        total = self.space.count("fast")
        while self._p1_index < total:
            i = self._p1_index
            route = self._phase1[i] if self._phase1 is not None else self.space.route_at("fast", i)
            self._p1_index += 1
            if self.key(route) not in seen:
                return Proposal(route=route, info={"phase": 1, "search": "mixed", "index": i})
        if self._phase2 is None and not self._phase2_done:
            if pending:  # phase 2 is decided on every phase-1 result: wait for those in flight
                return None
            self.positive_variants = self.find_positive_variants(history)
            self.positive_knobs = self.find_positive(history)
            if len(self.positive_variants) > 1:
                self._phase2 = enumerate(
                    mixed_phase2(self.space, self.positive_knobs).iter_routes("full")
                )
            else:
                self._phase2_done = True
        if self._phase2 is not None:
            for index, route in self._phase2:
                if self.key(route) not in seen:
                    return Proposal(
                        route=route,
                        info={"phase": 2, "search": "mixed", "index": index,
                              "positive_knobs": list(self.positive_knobs or ())},
                    )
            self._phase2, self._phase2_done = None, True
        return None

    def planned(self) -> int | None:
        if self.positive_knobs is None:
            return None
        extra = 0
        if len(self.positive_variants) > 1:
            extra = mixed_phase2(self.space, self.positive_knobs).count("full")
        return self.space.count("fast") + extra + len(self.warm_start)
