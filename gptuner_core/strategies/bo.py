"""``bo``: Bayesian optimisation with a learned feasibility model and a transfer prior.

Each route is a point of the product of its variable knobs, one feature per knob in [0, 1]
(numeric values by position in their list; unordered values with more than two choices one-hot;
a size knob, positive integers, that mixes powers of two with other values also gets "is a
power of two", which GPU block and tile sizes follow and a smooth model over positions cannot:
``pow2``).
A Gaussian process (:mod:`._gp`, refitted as results come back) models the log median latency of
the routes that built; a feasibility model (:mod:`._feasibility`) the probability that a route
builds, from those that failed (BUILD_FAILED, CRASHED, TIMED_OUT, ACCURACY_FAILED, or absent
from a recording: infeasible) and those that built. By default (``feasibility_model=learned``)
it is the lower of a pairwise share (a pair of knob values seen failing, failures blamed on
their worst pairs) and a Bayesian logistic regression on the knobs' log sizes, their squares and
products (GPU limits such as ``block_x * block_y <= 1024`` reach pairs never tried; far from the
routes tried it is unsure, not certain). Only candidates predicted to build with probability
``feasible_at`` or more compete when there are any; each proposal's ``info`` has ``p_build``.

Each proposal scores a sampled pool (random routes drawn with the strategy's seed, the one-off
neighbours of the best routes, random two/three-off neighbours of the best): only candidates
nearly as likely to build as the likeliest compete, on an acquisition that rotates (greedy EI,
EI asking ~5 % more, a lower confidence bound, the best one-off neighbour of the best route). The
product is never enumerated, so any space size works; the seed decides the initial design and
the pools, so seeds give genuinely different runs.

**Transfer** (``prior``, from ``--warm-start`` of another study or recording of the same knobs):
a GP fitted once on the source's results gives the prior mean of the new latency (``a + b ×
source``, fitted on the new results by ridge regression toward the identity); the GP models the
residual, whose scale on the exploring turn is at least ``transfer_spread`` of the source's
spread (the new results cluster where the source is right: :func:`._transfer.residual_scale`).
Routes that failed in the source (or are absent from an exhaustive one) start unlikely to build.
With no result of its own yet, its best guesses are the source's best routes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.routes import Route
from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy
from gptuner_core.strategies._bo_options import EXPLORE
from gptuner_core.strategies._bo_options import OPTIONS
from gptuner_core.strategies._bo_options import TURNS
from gptuner_core.strategies._features import _numeric
from gptuner_core.strategies._features import powers_of_two
from gptuner_core.strategies._gp import fit_subset
from gptuner_core.strategies._gp import prior_line
from gptuner_core.strategies._transfer import measured_or_modelled
from gptuner_core.strategies._transfer import residual_scale
from gptuner_core.strategies._transfer import source_table


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord



class BoStrategy(Strategy):
    name = "bo"
    summary = (
        "Bayesian optimisation (Gaussian process, expected improvement) that learns where "
        "routes fail or are infeasible and avoids them; --warm-start studies are its prior. "
        "Samples candidates, so any space size."
    )
    options = OPTIONS

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        import numpy as np

        super().__init__(space, **kw)
        from gptuner_core.errors import StrategyError

        for key in ("max_trials", "n_initial", "pool", "transfer_spread"):
            if self.opts[key] < 0:
                msg = f"strategy '{self.name}' option '{key}' must be >= 0 (got {self.opts[key]})"
                raise StrategyError(msg)
        fraction = self.opts["budget_fraction"]
        if not 0 <= fraction <= 1:
            msg = f"strategy '{self.name}' option 'budget_fraction' must be in [0, 1] (got {fraction})"
            raise StrategyError(msg)
        self._total = space.count("full")
        if self.opts["max_trials"] == 0 and fraction > 0:
            one_offs = space.count("fast") - 1
            self.opts["max_trials"] = min(
                self._total, max(one_offs, min(math.ceil(fraction * self._total), 4 * one_offs))
            )
        self._rng = np.random.default_rng(self.seed)
        terms = space.terms
        self._var = [i for i, t in enumerate(terms) if len(t.values) > 1]
        self._sizes = np.array([len(terms[i].values) for i in self._var], dtype=np.int64)
        self._radix = np.cumprod(np.concatenate([[1], self._sizes[:-1]])).astype(np.int64)
        self._pos = [{v: j for j, v in enumerate(terms[i].values)} for i in self._var]
        self._fixed = [t.values[0] if len(t.values) == 1 else "" for t in terms]
        self._names = space.names
        self._onehot = [len(terms[i].values) > 2 and not _numeric(terms[i].values) for i in self._var]
        self._pow2 = [powers_of_two(terms[i].values) if self.opts["pow2"] else None
                      for i in self._var]
        self._parsed: dict[str, tuple[int, ...] | None] = {}
        self._hyper: dict[str, Any] = {}
        self._fitted_at: dict[str, int] = {}
        self._source: dict[tuple[int, ...], float | None] = {}
        self._source_gp: Any = None
        self._size_tables: list[Any] | None = None  # feasibility_model=learned's features
        self._p_build: Any = None  # P(builds) of the last scored pool
        if self.prior is not None:
            self._load_prior()

    # -- routes <-> index tuples -------------------------------------------------------------
    def _tuple(self, route: Route | str) -> tuple[int, ...] | None:
        text = str(route)
        if text in self._parsed:
            return self._parsed[text]
        values = dict(route.assignments if isinstance(route, Route) else Route.parse(text).assignments)
        out: tuple[int, ...] | None = ()
        for i, pos in zip(self._var, self._pos, strict=True):
            name = self._names[i]
            j = pos.get(values.get(name, self._defaults.get(name, "")))
            if j is None:
                out = None
                break
            out = (*out, j)  # type: ignore[misc]
        self._parsed[text] = out
        return out

    def _route(self, idx: Sequence[int]) -> Route:
        values = list(self._fixed)
        for i, j in zip(self._var, idx, strict=True):
            values[i] = self.space.terms[i].values[int(j)]
        return Route(tuple(zip(self._names, values, strict=True)))

    def _features(self, idx: Any) -> Any:
        import numpy as np

        cols = []
        for d, size in enumerate(self._sizes):
            if self._onehot[d]:
                cols.append(np.eye(size)[idx[:, d]] / math.sqrt(2.0))
            else:
                cols.append((idx[:, d] / (size - 1))[:, None])
            if self._pow2[d] is not None:  # a second feature: is the value a power of two
                cols.append(np.array(self._pow2[d])[idx[:, d]][:, None])
        return np.hstack(cols) if cols else np.zeros((len(idx), 0))

    # -- prior -------------------------------------------------------------------------------
    def _load_prior(self) -> None:
        import numpy as np

        from gptuner_core.strategies._gp import Gp

        self._source = source_table(self.prior.results, self._tuple)  # type: ignore[union-attr]
        good = sorted((v, t) for t, v in self._source.items() if v is not None)
        if len(good) < 3:
            return
        keep = fit_subset(len(good))
        x = self._features(np.array([good[i][1] for i in keep]))
        y = np.array([good[i][0] for i in keep])
        self._src_mean, self._src_std = float(y.mean()), float(y.std()) or 1.0
        z = (y - self._src_mean) / self._src_std
        self._source_gp = Gp(x, z, self._fit("source", x, z, len(z)))
        self._src_best = [t for _, t in good[:50]]

    def _source_value(self, idx: Any) -> Any:
        """Source log-latency at each row: measured where the source has it, else its GP."""
        mean, _ = self._source_gp.predict(self._features(idx))
        return measured_or_modelled(mean * self._src_std + self._src_mean, idx, self._source)

    # -- the model ---------------------------------------------------------------------------
    def _fit(self, which: str, x: Any, y: Any, n: int) -> Any:
        from gptuner_core.strategies._gp import fit_hyper

        last = self._fitted_at.get(which, 0)
        if which not in self._hyper or n >= max(last + 4, int(1.4 * last)):
            self._hyper[which] = fit_hyper(x, y, self._hyper.get(which))
            self._fitted_at[which] = n
        return self._hyper[which]

    def _observations(self, history: Sequence[CandidateRecord]) -> tuple[list, list, list]:
        ok, ys, bad = [], [], []
        for rec in history:
            t = self._tuple(rec.requested_route)
            if t is None:
                continue
            if rec.eligible and rec.latency is not None and rec.latency.median_ms > 0:
                ok.append(t)
                ys.append(math.log(rec.latency.median_ms))
            elif rec.state.is_failure() or rec.state.value == "ACCURACY_FAILED":
                bad.append(t)
        return ok, ys, bad

    def _pool(self, ok: list, ys: list, taken: set) -> Any:
        import numpy as np

        rng, sizes = self._rng, self._sizes
        parts = [rng.integers(0, sizes, size=(self.opts["pool"], len(sizes)))]
        best = [ok[i] for i in np.argsort(ys)[:3]] if ok else []
        base = self._tuple(self.space.baseline())
        if self.opts["near_default"] and base is not None and base not in best:
            best.append(base)  # the default's one-offs compete too (trtexec's fast search)
        if self._source_gp is not None:
            best += self._src_best[:3]
            srcs = [t for t, v in self._source.items() if v is not None]
            pick = rng.choice(len(srcs), size=min(len(srcs), self.opts["pool"] // 2), replace=False)
            parts.append(np.array([srcs[i] for i in pick] + self._src_best))
        for b in best:
            base = np.array(b)
            for d, size in enumerate(sizes):
                rows = np.repeat(base[None, :], size, axis=0)
                rows[:, d] = np.arange(size)
                parts.append(rows)
            if b == best[0]:  # random two/three-off neighbours of the best
                mask = rng.random((200, len(sizes))) < 2.5 / len(sizes)
                parts.append(np.where(mask, rng.integers(0, sizes, size=(200, len(sizes))), base))
        pool = np.vstack(parts)
        if self._total >= 2**62:  # no int64 code per route: dedupe by tuples
            pool = np.unique(pool, axis=0)
            return pool[[tuple(int(j) for j in r) not in taken for r in pool]]
        codes, first = np.unique(pool @ self._radix, return_index=True)
        done = np.array([np.dot(t, self._radix) for t in taken if t is not None], dtype=np.int64)
        return pool[first[~np.isin(codes, done)]]

    def _posterior(self, pool: Any, px: Any, ok: list, ys: list) -> tuple[Any, Any, float, Any]:
        """Predicted log latency (mean, std) at the pool rows, the best so far (log), and the
        source's value there (``None`` without a prior)."""
        import numpy as np

        from gptuner_core.strategies._gp import Gp

        y = np.array(ys)
        prior_pool = prior_obs = None
        if self._source_gp is not None:
            prior_pool = self._source_value(pool)
            prior_obs = self._source_value(np.array(ok)) if ok else np.zeros(0)
        a, b = prior_line(y, prior_obs)
        base_pool = a + (b * prior_pool if prior_pool is not None else 0.0)
        if len(y):
            resid = y - a - (b * prior_obs if prior_obs is not None else 0.0)
            spread = self._src_std if prior_pool is not None else None
            # the floor only on the exploring turn
            share = self.opts["transfer_spread"] if self._acquisition() == EXPLORE else 0.0
            scale = residual_scale(resid, prior_spread=spread, share=share)
            z = resid / scale
            order = np.argsort(y)[fit_subset(len(y))]
            ox = self._features(np.array(ok)[order])
            gp = Gp(ox, z[order], self._fit("latency", ox, z[order], len(y)))
            mean, std = gp.predict(px)
            mean = base_pool + mean * scale
            std = std * scale
            best = float(y.min())
        else:
            mean, std = base_pool + np.zeros(len(pool)), np.full(len(pool), 0.3)
            best = float(mean.min())
        return mean, std, best, prior_pool

    def _score(self, pool: Any, ok: list, ys: list, bad: list) -> Any:
        import numpy as np

        from gptuner_core.strategies._gp import expected_improvement

        px = self._features(pool)
        mean, std, best, prior_pool = self._posterior(pool, px, ok, ys)
        y = np.array(ys)
        turn = self._acquisition()
        if turn == EXPLORE and self.opts["explore"] == "random":  # a random route likely to build
            acq = self._rng.random(len(pool)) + 1e-9
        elif turn == EXPLORE:  # optimistic bound: the region the model knows least about, if it can win
            acq = -(mean - 2.0 * std)
            acq = acq - acq.min() + 1e-9
        else:  # expected improvement, greedy then asking for at least ~5 % (log units)
            acq = expected_improvement(mean, std, best, xi=0.0 if turn == 0 else 0.05)
        if prior_pool is not None and not len(y):
            acq = np.exp(-(mean - mean.min()))
        if not len(acq):
            return acq
        feasible = self._feasible(pool, px, ok, bad)
        self._p_build = feasible
        if turn == 3 and len(y):  # polish: the best one-off neighbour of the best route so far
            near = (pool != np.array(ok[int(np.argmin(y))])).sum(1) == 1
            near &= feasible >= self.opts["feasible_at"]  # none likely to build: a usual turn
            if near.any():
                return np.where(self._likely(feasible, near), acq * feasible + 1e-12 * feasible, -1.0)
        # a constraint, not a weight: only routes nearly as likely to build as the likeliest
        # compete on expected improvement (EI x P alone still chased far, failing corners)
        return np.where(self._likely(feasible), acq * feasible, -1.0)

    def _likely(self, feasible: Any, among: Any = None) -> Any:
        """The candidates that compete: P(builds) at least ``feasible_at`` where any (among
        ``among``) reach it, and at least ``min_feasible`` x the likeliest's."""
        import numpy as np

        among = np.ones(len(feasible), dtype=bool) if among is None else among
        top = float(feasible[among].max()) if among.any() else 0.0
        floor = self.opts["min_feasible"] * top
        if top >= self.opts["feasible_at"]:
            floor = max(floor, self.opts["feasible_at"])
        return among & (feasible >= floor)

    def _turn(self) -> int:
        """Which acquisition turn this proposal is (a subclass may count only some proposals)."""
        return self._own

    def _acquisition(self) -> int:
        """This proposal's acquisition (:data:`TURNS`: 0 greedy EI ... 3 polish)."""
        turns = TURNS[self.opts["acquisition"]]
        return turns[self._turn() % len(turns)]

    def _feasible(self, pool: Any, px: Any, ok: list, bad: list) -> Any:
        """P(the route builds) per pool row (``feasibility_model``), times the source's verdict."""
        import numpy as np

        p = np.ones(len(pool))
        if not self.opts["feasibility"]:
            return p
        if bad:
            from gptuner_core.strategies._feasibility import kernel_share
            from gptuner_core.strategies._feasibility import pairwise_share

            rows = np.array(ok + bad)
            built = np.array([1.0] * len(ok) + [0.0] * len(bad))
            if self.opts["feasibility_model"] == "pairs":
                p = pairwise_share(rows, built, pool, self._sizes)
            elif self.opts["feasibility_model"] == "learned":
                from gptuner_core.strategies._feasibility import learned_share
                from gptuner_core.strategies._feasibility import size_features

                if self._size_tables is None:
                    self._size_tables = size_features([self.space.terms[i].values for i in self._var])
                p = learned_share(rows, built, pool, self._sizes, self._size_tables)
            else:
                hyper = self._hyper.get("latency")
                scales = np.minimum(np.asarray(hyper.scales), 1.0) * 0.5 if hyper else 0.25
                p = kernel_share(self._features(rows), built, px, scales)
        if self._source:  # failed in the source (or absent from an exhaustive one): unlikely
            from gptuner_core.strategies._feasibility import source_verdict

            p = p * source_verdict(pool, self._source, self.prior.exhaustive)  # type: ignore[union-attr]
        return p

    # -- the contract ------------------------------------------------------------------------
    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        import numpy as np

        decided, first = self.opening(history, pending)
        if decided or not self._var:
            return first
        taken = {self._tuple(r.requested_route) for r in history}
        taken |= {self._tuple(p.route) for p in pending if p.remeasure_of is None}
        if len(taken - {None}) >= self._total:
            return None
        ok, ys, bad = self._observations(history)
        phase, p_build = "model", None
        if self._source_gp is None and self._own < self.opts["n_initial"]:
            pool, phase = self._rng.integers(0, self._sizes, size=(64, len(self._sizes))), "initial"
            pool = pool[[tuple(int(j) for j in r) not in taken for r in pool]]
            choice = pool[0] if len(pool) else None
            if choice is not None:
                from gptuner_core.strategies._feasibility import novelty
  # spread: the most knob values no built route has yet,
                p = (self._feasible(pool, self._features(pool), ok, bad)  # among those likely
                     if bad and self.opts["feasibility"] else np.ones(len(pool)))  # to build
                new = novelty(pool, ok + bad, self._sizes) + 1e-3 * np.arange(len(pool))[::-1] / len(pool)
                fine = p >= min(self.opts["feasible_at"], float(p.max()))
                at = int(np.argmax(np.where(fine, new, -1.0)))
                choice, p_build = pool[at], float(p[at])
        else:
            pool = self._pool(ok, ys, taken)
            self._p_build = None
            at = int(np.argmax(self._score(pool, ok, ys, bad))) if len(pool) else None
            choice = pool[at] if at is not None else None
            if at is not None and self._p_build is not None:
                p_build = float(self._p_build[at])
        if choice is None:
            choice = self._any_untaken(taken)
            if choice is None:
                return None
        self._own += 1
        info = {"search": "bo", "phase": phase}
        if p_build is not None:
            info["p_build"] = round(p_build, 3)
        return Proposal(route=self._route(choice), info=info)

    def _any_untaken(self, taken: set) -> tuple[int, ...] | None:
        from gptuner_core.strategies.random import random_indices

        for index in random_indices(self._total, int(self._rng.integers(0, 2**31))):
            t = self._tuple(self.space.route_at("full", index))
            if t not in taken:
                return t
        return None

    def planned(self) -> int | None:
        return self.capped_plan(self._total)
