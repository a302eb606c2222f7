"""``hybrid``: ``bo``'s model proposes, a model-guided local search polishes, basins restart.

``bo`` alone settles in one basin: its worst seeds spend their last 150 builds around a local
optimum (a route none of whose one-off neighbours is faster) at 68-78 % of the optimum of the
convolution spaces (benchmarks/search_scale.py, issue 28). Here, after the same random start,
proposals alternate between

* a *global* turn: ``bo``'s own proposal (sampled pool, feasibility constraint, acquisition
  portfolio), and
* *local* turns around a centre: the best route so far that is not near a finished basin. The
  candidates are the centre's one-off neighbours and random two/three-off ones; the GP ranks
  them by expected improvement over the centre, among those about as likely to build as the
  likeliest. A centre whose one-off neighbours are all evaluated, or that gave no improvement
  in ``patience`` local turns, is a finished local optimum; the next centre is the best route at
  least ``restart_distance`` knobs away from every finished one (or better than it), so the
  search restarts in another basin without throwing away what the model learnt.

With a ``--warm-start`` prior it is ``bo`` (the prior already says where to look).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies.bo import BoStrategy


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord


class HybridStrategy(BoStrategy):
    name = "hybrid"
    summary = (
        "bo's Gaussian process proposes, a model-guided local search polishes the best route, "
        "and a finished basin restarts the search elsewhere; learns where routes fail. Samples "
        "candidates, so any space size."
    )
    options = {
        **BoStrategy.options,
        "cycle": StrategyOption(
            description="one global (bo) turn in this many model proposals, the others local "
            "(1: bo alone)",
            default=3, type=int,
        ),
        "patience": StrategyOption(
            description="local turns around one centre without improvement before it counts "
            "as a finished local optimum",
            default=12, type=int,
        ),
        "restart_distance": StrategyOption(
            description="a new centre differs from every finished one in at least this many "
            "knobs (unless it is faster)",
            default=3, type=int,
        ),
    }

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(space, **kw)
        from gptuner_core.errors import StrategyError

        for key in ("cycle", "patience", "restart_distance"):
            if self.opts[key] < 1:
                msg = f"strategy '{self.name}' option '{key}' must be >= 1 (got {self.opts[key]})"
                raise StrategyError(msg)
        self._done: list[tuple[tuple[int, ...], float]] = []  # finished centres, log latency
        self._centre: tuple[int, ...] | None = None
        self._tries = 0
        self._global = 0

    def _turn(self) -> int:
        """bo's acquisition turns count only the global proposals (with a prior: all of them)."""
        return self._own if self._source_gp is not None else self._global

    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        import numpy as np

        model = self._own >= self.opts["n_initial"] and self._source_gp is None
        if not model or self._own % self.opts["cycle"] == 0 or not self._var:
            if model:
                self._global += 1
            return super().ask(history, pending)
        first = self.prelude(history, pending)
        if first is not None:
            return first
        limit = self.opts["max_trials"]
        if limit and self._own >= limit:
            return None
        taken = {self._tuple(r.requested_route) for r in history}
        taken |= {self._tuple(p.route) for p in pending if p.remeasure_of is None}
        ok, ys, bad = self._observations(history)
        choice = self._local(ok, np.array(ys), bad, taken) if ok else None
        if choice is None:  # nothing left to polish: a global turn
            self._global += 1
            return super().ask(history, pending)
        self._own += 1
        return Proposal(route=self._route(choice), info={
            "search": "hybrid", "phase": "local", "centre": str(self._route(self._centre)),
            "finished": len(self._done)})

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

        def untaken(rows: Any) -> Any:
            if not len(rows):
                return rows
            rows = np.unique(rows, axis=0)
            return rows[[tuple(int(j) for j in r) not in taken for r in rows]]
        return untaken(one), untaken(far)

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
        for _ in range(len(ok)):
            at = self._pick_centre(ok, y, rows)
            if at is None:
                return None
            centre = ok[at]
            if centre != self._centre:
                self._centre, self._tries = centre, 0
            one, far = self._neighbours(centre, taken)
            if not len(one) or self._tries >= self.opts["patience"]:
                self._done.append((centre, float(y[at])))
                continue
            self._tries += 1
            return self._rank(np.vstack([one, far]) if len(far) else one, ok, y, bad, float(y[at]))
        return None

    def _rank(self, pool: Any, ok: list, y: Any, bad: list, centre_y: float) -> tuple[int, ...]:
        """The neighbour with the best expected improvement over the centre, among those about
        as likely to build as the likeliest."""
        import numpy as np

        from gptuner_core.strategies._gp import expected_improvement

        px = self._features(pool)
        mean, std, _, _ = self._posterior(pool, px, ok, list(y))
        acq = expected_improvement(mean, std, centre_y, xi=0.0) + 1e-12
        feasible = self._feasible(pool, px, ok, bad)
        score = np.where(feasible >= self.opts["min_feasible"] * feasible.max(), acq * feasible, -1.0)
        return tuple(int(j) for j in pool[int(np.argmax(score))])
