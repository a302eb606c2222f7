"""``local``: first-improvement hill climbing over one-off neighbours, with random restarts.

From the best route of the current climb, its one-off neighbours (one knob changed) are tried in a
seeded random order; the first one faster than the climb's best becomes the new centre. When every
neighbour of the centre has been evaluated without improvement (a local optimum), the climb
restarts from a random route. A failed route is simply not an improvement. No model: the
reference "local search with restarts" of the search comparison (benchmarks/search_scale.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy
from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._base import latency_of
from gptuner_core.strategies.random import random_indices


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord
    from gptuner_core.routes import Route


class LocalStrategy(Strategy):
    name = "local"
    summary = (
        "Local search: hill climbing over one-off neighbours (first improvement, seeded order), "
        "random restart at each local optimum. No model."
    )
    options = {
        "max_trials": StrategyOption(
            description="stop after this many routes of its own (0: until the space is exhausted)",
            default=0, type=int,
        ),
    }

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        import numpy as np

        super().__init__(space, **kw)
        self._rng = np.random.default_rng(self.seed)
        self._restarts = random_indices(space.count("full"), self.seed)
        self._centre: str | None = None  # key of the climb's best route
        self._centre_route: Route | None = None

    def _neighbours(self, route: Route) -> list[Route]:
        from gptuner_core.routes import Route

        values = dict(route.assignments)
        out = []
        for t in self.space.terms:
            for v in t.values:
                if v != values.get(t.name):
                    out.append(Route(tuple((n, v if n == t.name else values.get(n, ""))
                                           for n in self.space.names)))
        return [out[i] for i in self._rng.permutation(len(out))]

    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        decided, first = self.opening(history, pending)
        if decided:
            return first
        seen = self.taken(history, pending)
        known = self.by_key(history)
        if self._centre is not None:  # move to the best evaluated one-off of the centre
            best = latency_of(known.get(self._centre))
            for key, rec in known.items():
                lat = latency_of(rec)
                if lat is not None and (best is None or lat < best) and rec.strategy_info.get(
                        "centre") == self._centre:
                    self._centre, self._centre_route, best = key, self._parse(rec), lat
            for route in self._neighbours(self._centre_route):  # type: ignore[arg-type]
                if self.key(route) not in seen:
                    self._own += 1
                    return Proposal(route=route, info={"search": "local", "centre": self._centre})
        for index in self._restarts:  # a local optimum (or the start): restart at random
            route = self.space.route_at("full", index)
            key = self.key(route)
            if key not in seen:
                self._centre, self._centre_route = key, route
                self._own += 1
                return Proposal(route=route, info={"search": "local", "restart": True})
        return None

    @staticmethod
    def _parse(rec: CandidateRecord) -> Route:
        from gptuner_core.routes import Route

        return Route.parse(rec.requested_route)
