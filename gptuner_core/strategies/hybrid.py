"""``hybrid``: ``bo``'s model proposes, a model-ordered local search climbs, basins restart.

``bo`` alone settles in one basin: its worst seeds spend their last 150 builds around a local
optimum (a route none of whose one-off neighbours is faster) at 68-78 % of the optimum of the
convolution spaces (benchmarks/search_scale.py, issue 28); local search with restarts escapes
but is slow without a model. After ``bo``'s random start, one proposal in ``cycle`` is ``bo``'s
own (sampled pool, feasibility constraint, acquisition portfolio); the others are *local*:

* the centre is the best route so far that is not near a finished basin (``restart_distance``
  knobs or fewer from a finished centre, and no faster);
* the candidates are its untried one-off neighbours (``reach=3``: also random two/three-off
  ones); the knobs take turns (``local_order=knobs``: a knob with the fewest of the centre's
  neighbours tried goes next) and the GP picks the value by expected improvement over the
  centre, among those about as likely to build as the likeliest; a faster neighbour becomes the
  centre at once; a move judged unlikely to build also competes with one switch (a two-valued
  knob) flipped where that is likely to build (``repair``: on dedispersion ``tile_size_x=1``
  builds only with ``tile_stride_x=0``);
* a centre whose one-off neighbours are all tried, or none of them likely to build
  (``feasible_at``), or ``patience`` turns spent, is a finished local optimum. Every other time (``restart=random``) the next climb starts at a random route
  likely to build, away from every finished centre, and follows its own best route until it
  finishes; otherwise the centre is the best route elsewhere. The model keeps what it learnt.
* a random restart starts in the combination of switch values with the fewest routes tried
  (``restart_strata``; a combination where two or more were tried and none built is skipped,
  and a start that fails is followed by another, up to three in a row). A switch often picks a
  code path with basins of its own: on convolution A100 every route within 90 % of the optimum
  has ``read_only=1, use_shmem=1`` and each switch alone is slower, so climbs that start
  elsewhere stay at 67.7 %.

With ``pair_moves`` (the default) a local move may also move two numeric knobs one value each,
competing as one more knob (``_moves.py``: a faster route that no one-off move reaches).

After ``stall`` routes without a faster one (a seed stuck in a basin), every other proposal is
a global one until a faster route is found (on convolution A100 the worst of 10 seeds at 200
builds went from 67.7 % to 88.6 % of the optimum), and a centre is finished after
``stall_patience`` turns without improvement, so that restarts come sooner.

The model orders the climbs but never ends one: ending a climb when the GP gave no neighbour
a 5 % chance of being faster lost 1-10 points at 200 builds (it is overconfident there).
With a ``--warm-start`` prior it is ``bo`` (the prior already says where to look).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._moves import OPTIONS as MOVES
from gptuner_core.strategies._moves import PairMoves
from gptuner_core.strategies._moves import untaken as _untaken
from gptuner_core.strategies.bo import BoStrategy


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord


class HybridStrategy(BoStrategy):
    name = "hybrid"
    summary = (
        "bo's Gaussian process proposes, a local search ordered by it climbs from the best route, "
        "and a finished basin restarts the search elsewhere; learns where routes fail. Samples "
        "candidates, so any space size."
    )
    options = {
        **BoStrategy.options,
        "cycle": StrategyOption(
            description="one global (bo) turn in this many model proposals, the others local "
            "(1: bo alone)",
            default=4, type=int,
        ),
        "patience": StrategyOption(
            description="local turns around one centre without improvement before it counts "
            "as a finished local optimum",
            default=30, type=int,
        ),
        "restart": StrategyOption(
            description="after a finished basin the next centre is the best route elsewhere "
            "(best), or every other time a random route likely to build (random)",
            default="random", choices=("best", "random"),
        ),
        "reach": StrategyOption(
            description="local moves change at most this many knobs (1: one-off neighbours only)",
            default=1, type=int, choices=(1, 3),
        ),
        "local_order": StrategyOption(
            description="knobs: the knobs take turns (the next local move changes a knob with the "
            "fewest of the centre's neighbours tried, its best value by expected improvement); "
            "ei: the best expected improvement of all the neighbours",
            default="knobs", choices=("knobs", "ei"),
        ),
        "stall": StrategyOption(
            description="after this many routes without a faster one, every other proposal is "
            "a global (bo) one until one is found (0: never)",
            default=25, type=int,
        ),
        "repair": StrategyOption(
            description="a one-off move judged unlikely to build also competes with one switch "
            "flipped, where that is likely to build",
            default=True, type=bool,
        ),
        "restart_strata": StrategyOption(
            description="a random restart starts in the combination of switch values (two-valued "
            "knobs, at most 4) with the fewest routes tried, skipping one where none built",
            default=True, type=bool,
        ),
        "strata_floor": StrategyOption(
            description="restart_strata: a combination competes only with a start at least this "
            "likely to build",
            default=0.2, type=float,
        ),
        "stall_patience": StrategyOption(
            description="while stalled (stall), the local turns around one centre without "
            "improvement before it is finished (0: patience)",
            default=10, type=int,
        ),
        "restart_distance": StrategyOption(
            description="a new centre differs from every finished one in at least this many "
            "knobs (unless it is faster)",
            default=3, type=int,
        ),
        **MOVES,
    }

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(space, **kw)
        from gptuner_core.errors import StrategyError

        for key in ("cycle", "patience", "restart_distance"):
            if self.opts[key] < 1:
                msg = f"strategy '{self.name}' option '{key}' must be >= 1 (got {self.opts[key]})"
                raise StrategyError(msg)
        if self.opts["stall_patience"] < 0 or not 0.0 <= self.opts["strata_floor"] <= 1.0:
            msg = (f"strategy '{self.name}': option 'stall_patience' must be >= 0 and 'strata_floor' "
                   f"between 0 and 1 (got stall_patience={self.opts['stall_patience']}, "
                   f"strata_floor={self.opts['strata_floor']})")
            raise StrategyError(msg)
        self._done: list[tuple[tuple[int, ...], float]] = []  # finished centres, log latency
        self._centre: tuple[int, ...] | None = None
        self._tries: dict[tuple[int, ...], int] = {}  # local turns spent around each centre
        self._climb: set[tuple[int, ...]] = set()  # a climb from a random start: its routes
        self._global = 0
        self._p_build_local = 1.0
        self._stuck = False
        self._failed_starts = 0
        self._pairs = PairMoves(self)  # two numeric knobs moved one value each (pair_moves)

    def _turn(self) -> int:
        """bo's acquisition turns count only the global proposals (with a prior: all of them)."""
        return self._own if self._source_gp is not None else self._global

    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        import numpy as np

        model = self._own >= self.opts["n_initial"] and self._source_gp is None
        cycle = self.opts["cycle"]
        self._stuck = bool(model and self.opts["stall"]
                           and self._stalled(history) >= self.opts["stall"])
        if self._stuck:
            cycle = 2  # no faster route for a while: every other proposal is a global one
        if not model or self._own % cycle == 0 or not self._var:
            if model:
                self._global += 1
            return super().ask(history, pending)
        decided, first = self.opening(history, pending)
        if decided:
            return first
        taken = {self._tuple(r.requested_route) for r in history}
        taken |= {self._tuple(p.route) for p in pending if p.remeasure_of is None}
        ok, ys, bad = self._observations(history)
        choice = self._local(ok, np.array(ys), bad, taken) if ok else None
        if choice is None:  # nothing left to polish: a global turn
            self._global += 1
            return super().ask(history, pending)
        self._own += 1
        info = {"search": "hybrid", "phase": "local", "finished": len(self._done),
                "p_build": round(self._p_build_local, 3)}
        if self._centre is None:  # a random start of a new climb
            info["phase"] = "restart"
        else:
            info["centre"] = str(self._route(self._centre))
        return Proposal(route=self._route(choice), info=info)

    @staticmethod
    def _stalled(history: Sequence[CandidateRecord]) -> int:
        """Routes evaluated since the last one faster than every route before it."""
        best, since = float("inf"), 0
        for rec in history:
            since += 1
            lat = rec.latency.median_ms if rec.eligible and rec.latency is not None else None
            if lat is not None and lat < best:
                best, since = lat, 0
        return since

    def _neighbours(self, centre: tuple[int, ...], taken: set) -> tuple[Any, Any]:
        """Untaken one-off neighbours of ``centre``, then random two/three-off ones."""
        import numpy as np

        base, sizes = np.array(centre), self._sizes
        ones = []
        for d, size in enumerate(sizes):
            rows = np.repeat(base[None, :], size, axis=0)
            rows[:, d] = np.arange(size)
            ones.append(np.delete(rows, centre[d], axis=0))
        one = np.vstack(ones)
        mask = self._rng.random((120, len(sizes))) < 2.5 / len(sizes)
        far = np.where(mask, self._rng.integers(0, sizes, size=(120, len(sizes))), base)
        apart = (far != base).sum(1)
        far = far[(apart >= 2) & (apart <= 3)]
        return _untaken(one, taken), _untaken(far, taken)

    def _knobs_in_turn(self, pool: Any, centre: tuple[int, ...], taken: set) -> Any:
        """Per pool row, how many neighbours of ``centre`` that change the same knob were tried
        (``local_order=knobs``; ``ei``: 0 everywhere; two/three-off rows: -1, they take no turn
        and always compete). The move goes to the knob
        with the fewest among those likely to build: a knob with 16 values would otherwise take
        most turns, one value after another, before a two-valued knob that decides more (seen on
        convolution A6000: 20 builds across block_size_x in a region where every value was slow)."""
        import numpy as np

        base = np.array(centre)
        if self.opts["local_order"] != "knobs":
            return np.zeros(len(pool), dtype=np.int64)
        tried = np.zeros(len(self._sizes), dtype=np.int64)
        for t in taken:
            if t is not None:
                changed = np.flatnonzero(np.array(t) != base)
                if len(changed) == 1:
                    tried[changed[0]] += 1
        diff = pool != base
        switch = self._sizes == 2
        # a repaired move (a knob and a switch that makes it build) takes the knob's turn
        repaired = (diff.sum(1) == 2) & ((diff & switch).sum(1) == 1) & ((diff & ~switch).sum(1) == 1)
        diff[repaired] &= ~switch
        one = diff.sum(1) == 1
        out = np.full(len(pool), -1, dtype=np.int64)
        out[one] = tried[diff[one].argmax(1)]
        return out

    def _with_repairs(self, one: Any, centre: tuple[int, ...], ok: list, bad: list,
                      taken: set) -> Any:
        """``one`` (one-off neighbours of ``centre``) and, for each judged unlikely to build,
        the routes that also flip one switch (a two-valued knob) and are likely to build: on
        dedispersion ``tile_size_x=1`` builds only with ``tile_stride_x=0``, so from
        ``tile_size_x=2, tile_stride_x=1`` the faster ``tile_size_x=1`` is no one-off move."""
        import numpy as np

        switches = np.flatnonzero(self._sizes == 2)
        if not len(switches):
            return one
        p = self._feasible(one, self._features(one), ok, bad)
        weak = one[p < self.opts["feasible_at"]]
        if not len(weak):
            return one
        base = np.array(centre)
        extra = []
        for d in switches:
            rows = weak[weak[:, d] == base[d]].copy()
            rows[:, d] = 1 - rows[:, d]
            extra.append(rows)
        extra = _untaken(np.vstack(extra), taken)
        if not len(extra):
            return one
        q = self._feasible(extra, self._features(extra), ok, bad)
        return np.vstack([one, extra[q >= self.opts["feasible_at"]]])

    def _pick_centre(self, ok: list, y: Any, rows: Any) -> int | None:
        """The best route not within ``restart_distance`` of a finished centre (or faster)."""
        import numpy as np

        free = np.ones(len(ok), dtype=bool)
        for centre, value in self._done:
            near = (rows != np.array(centre)).sum(1) < self.opts["restart_distance"]
            free &= ~(near & (y >= value - 1e-12))
        if not free.any():
            return None
        index = np.flatnonzero(free)
        return int(index[np.argmin(y[index])])

    def _local(self, ok: list, y: Any, bad: list, taken: set) -> tuple[int, ...] | None:
        import numpy as np

        rows = np.array(ok)
        for _ in range(len(ok) + 1):
            if self._climb:  # a climb from a random start: its best route is the centre
                mine = [i for i, t in enumerate(ok) if t in self._climb]
                if not mine:  # the start failed to build (or is in flight): give it up
                    self._climb = set()
                    if self.opts["restart_strata"] and self._failed_starts < 3:
                        self._failed_starts += 1
                        start = self._new_climb(ok, bad, taken)
                        if start is not None:
                            return start
                    continue
                self._failed_starts = 0
                at = mine[int(np.argmin(y[mine]))]
            else:
                at = self._pick_centre(ok, y, rows)
                if at is None:
                    return None
            centre = ok[at]
            one, far = self._neighbours(centre, taken)
            if self.opts["repair"] and len(one) and bad:
                one = self._with_repairs(one, centre, ok, bad, taken)
            patience = self.opts["patience"]
            if self._stuck and self.opts["stall_patience"]:
                patience = self.opts["stall_patience"]
            if len(one) and self._tries.get(centre, 0) < patience:
                pool = np.vstack([one, far]) if len(far) and self.opts["reach"] > 1 else one
                pool = self._pairs.pool(pool, centre, taken)
                turn = self._knobs_in_turn(pool, centre, taken)
                turn = self._pairs.turns(turn, pool, centre, taken)  # pair_moves: one more knob
                choice = self._rank(pool, ok, y, bad, float(y[at]), turn)
                if choice is not None:
                    break
            self._done.append((centre, float(y[at])))  # a local optimum: finished
            restart = self.opts["restart"] == "random" and len(self._done) % 2 == 1
            if self._climb or not restart:
                self._climb = set()
                continue
            start = self._new_climb(ok, bad, taken)  # every other restart: a random route
            if start is not None:
                return start
        else:
            return None
        self._centre = centre
        self._tries[centre] = self._tries.get(centre, 0) + 1
        if self._climb:
            self._climb.add(choice)
        return choice

    def _new_climb(self, ok: list, bad: list, taken: set) -> tuple[int, ...] | None:
        """A climb from a random start (:meth:`_random_start`): its first route, or ``None``."""
        start = self._random_start(ok, bad, taken)
        if start is not None:
            self._climb, self._centre = {start}, None
        return start

    def _random_start(self, ok: list, bad: list, taken: set) -> tuple[int, ...] | None:
        """A random route likely to build, ``restart_distance`` knobs or more from every
        finished centre."""
        import numpy as np

        pool = self._rng.integers(0, self._sizes, size=(self.opts["pool"], len(self._sizes)))
        pool = pool[[tuple(int(j) for j in r) not in taken for r in pool]]
        for centre, _ in self._done:
            far = (pool != np.array(centre)).sum(1) >= self.opts["restart_distance"]
            pool = pool[far] if far.any() else pool
        if not len(pool):
            return None
        feasible = self._feasible(pool, self._features(pool), ok, bad)
        switches = np.flatnonzero(self._sizes == 2)
        if self.opts["restart_strata"] and 1 <= len(switches) <= 4:
            from gptuner_core.strategies._strata import least_tried

            # the combination of switch values tried least, with a start likely enough to build
            for mine in least_tried(pool, switches, taken, ok, self._rng):
                if feasible[mine].max() >= self.opts["strata_floor"]:
                    likely = np.flatnonzero(self._likely(feasible, mine))
                    self._p_build_local = float(feasible[likely[0]])
                    return tuple(int(j) for j in pool[likely[0]])
            return None  # the combinations left never built, or are unlikely to
        likely = np.flatnonzero(self._likely(feasible))
        self._p_build_local = float(feasible[likely[0]])
        return tuple(int(j) for j in pool[likely[0]])

    def _rank(self, pool: Any, ok: list, y: Any, bad: list, centre_y: float,
              turn: Any) -> tuple[int, ...] | None:
        """The neighbour with the best expected improvement over the centre: of the knobs with a
        move at least half as likely to build as the likeliest, the one whose turn it is
        (``turn``: fewest tried), and of its moves those about as likely to build as its
        likeliest (the model orders the climb; it never ends it)."""
        import numpy as np

        from gptuner_core.strategies._gp import expected_improvement

        px = self._features(pool)
        mean, std, _, _ = self._posterior(pool, px, ok, list(y))
        acq = expected_improvement(mean, std, centre_y, xi=0.0) + 1e-12
        feasible = self._feasible(pool, px, ok, bad)
        if feasible.max() < self.opts["feasible_at"]:  # no neighbour likely to build: finished
            return None
        # the knob whose turn it is, among knobs with a move at least half as likely to build
        # as the likeliest; then its values about as likely to build as its likeliest
        knob = turn >= 0  # one-off rows; the others (reach=3) take no turn
        rivals = knob & (feasible >= 0.5 * feasible.max())
        mine = ~knob | (turn <= turn[rivals].min()) if rivals.any() else np.ones(len(pool), bool)
        likely = self._likely(feasible, mine)
        score = np.where(likely, acq * feasible, -1.0)
        at = int(np.argmax(score))
        self._p_build_local = float(feasible[at])
        return tuple(int(j) for j in pool[at])
