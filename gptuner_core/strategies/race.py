"""``race``: successive halving over the measurement budget.

Rung 0 measures every route of a pool (trtexec's ``fast`` routes, or ``pool_size`` random routes
of the full space) briefly (``Proposal.measure_scale = min_scale``). Each later rung keeps the
best ``1/eta`` of the contenders (by the latest measured median) and measures them again with
``eta`` times more samples, until the scale reaches 1 or one contender is left. Those
re-measurements are the one documented exception to the dedupe rule: their proposals carry
``remeasure_of=<number of the previous record>`` (and ``info={"race_rung": k}``).

Every proposal but the baseline also sets ``build_timeout_factor``: the tuner kills a build that
takes longer than that many times the default route's build time (slow builds are rarely fast
engines, and they eat the budget).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gptuner_core.errors import StrategyError
from gptuner_core.routes import Route
from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy
from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._base import latency_of
from gptuner_core.strategies.random import random_indices


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord


class RaceStrategy(Strategy):
    name = "race"
    summary = (
        "Successive halving: a short measurement for every route of a fast/random pool, then "
        "longer ones for the best 1/eta, and so on; kills builds slower than k× the default's."
    )
    options = {
        "pool": StrategyOption(
            description="rung-0 routes: trtexec's fast one-offs or random routes of the full space",
            default="fast",
            choices=("fast", "random"),
        ),
        "pool_size": StrategyOption(
            description="number of random routes in the pool (pool=random)", default=32, type=int,
            minimum=1,
        ),
        "eta": StrategyOption(description="keep the best 1/eta per rung", default=3.0, type=float,
                              minimum=1.0),
        "min_scale": StrategyOption(
            description="measurement scale of rung 0 (1 = the full measurement)",
            default=0.25,
            type=float,
            minimum=0.0,
            maximum=1.0,
        ),
        "build_timeout_factor": StrategyOption(
            description="kill builds slower than this × the default route's build time (0: off)",
            default=3.0,
            type=float,
            minimum=0.0,
        ),
    }

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(space, **kw)
        o = self.opts
        if o["eta"] <= 1:
            msg = f"strategy 'race' option 'eta' must be > 1 (got {o['eta']})"
            raise StrategyError(msg)
        if not 0 < o["min_scale"] <= 1:
            msg = f"strategy 'race' option 'min_scale' must be in (0, 1] (got {o['min_scale']})"
            raise StrategyError(msg)
        if o["pool_size"] < 1 or o["build_timeout_factor"] < 0:
            msg = (
                "strategy 'race' options 'pool_size' must be >= 1 and 'build_timeout_factor' "
                f">= 0 (got {o['pool_size']}, {o['build_timeout_factor']})"
            )
            raise StrategyError(msg)
        self._pool = self._make_pool()
        self._next = 0
        self._rung = 0
        self._scale = o["min_scale"]
        self._queue: list[tuple[Route, int]] = []
        self._contenders: list[str] = []

    def _make_pool(self) -> list[Route]:
        if self.opts["pool"] == "fast":
            return list(self.space.iter_routes("fast"))
        out: list[Route] = []
        for index in random_indices(self.space.count("full"), self.seed):
            out.append(self.space.route_at("full", index))
            if len(out) >= self.opts["pool_size"]:
                break
        return out

    def _factor(self) -> float | None:
        return self.opts["build_timeout_factor"] or None

    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        first = self.prelude(history, pending)
        if first is not None:
            return first
        seen = self.taken(history, pending)
        while self._next < len(self._pool):
            route = self._pool[self._next]
            self._next += 1
            if self.key(route) not in seen:
                return Proposal(
                    route=route,
                    info={"race_rung": 0, "search": "race"},
                    measure_scale=self._scale,
                    build_timeout_factor=self._factor(),
                )
        if pending:  # a rung is ranked on all its results: wait for those in flight
            return None
        if not self._queue:
            self._promote(history)
        if self._queue:
            route, number = self._queue.pop(0)
            return Proposal(
                route=route,
                info={"race_rung": self._rung, "search": "race"},
                remeasure_of=number,
                measure_scale=self._scale,
                build_timeout_factor=self._factor(),
            )
        return None

    def _promote(self, history: Sequence[CandidateRecord]) -> None:
        """Fill the queue with the next rung's contenders, or leave it empty when done."""
        if self._scale >= 1:
            return
        latest = self.by_key(history)
        base_key = self.key(self.space.baseline())
        if self._rung == 0:
            keys = {self.key(r) for r in self._pool} | {self.key(r) for r in self.warm_start}
        else:
            keys = set(self._contenders)
        keys.discard(base_key)
        ranked = sorted(
            (lat, k) for k in keys if (lat := latency_of(latest.get(k))) is not None
        )
        if len(ranked) <= 1 and self._rung > 0:
            return
        keep = max(1, math.ceil(len(ranked) / self.opts["eta"]))
        self._contenders = [k for _, k in ranked[:keep]]
        if not self._contenders:
            return
        self._rung += 1
        self._scale = min(1.0, self._scale * self.opts["eta"])
        self._queue = [
            (Route.parse(latest[k].requested_route), latest[k].number) for k in self._contenders
        ]

    def planned(self) -> int | None:
        n = len(self._pool) + len(self.warm_start)
        scale, alive = self.opts["min_scale"], len(self._pool) - 1
        while scale < 1 and alive > 1:
            alive = max(1, math.ceil(alive / self.opts["eta"]))
            scale = min(1.0, scale * self.opts["eta"])
            n += alive
        return n
