"""Optuna-backed strategies driven through ask/tell (each candidate still runs isolated).

One categorical distribution per variable knob of the space (knobs with one value are pinned).
Each :class:`Proposal` is built from a trial's params; the trial is told the candidate's median
latency in ms when the record comes back. The study is rebuilt from ``history`` on every ask, so
records of a resumed run, the baseline and warm-start routes all inform the sampler
(``study.add_trial``).

Failures (BUILD_FAILED / CRASHED / TIMED_OUT) are told as a *penalty* by default: a value of
``penalty_factor`` × the slowest latency seen so far. Build failures are usually caused by one
knob value, and a FAIL state tells TPE/GP nothing (they ignore failed trials), so the sampler
would keep proposing the same failing region; a penalty teaches it to avoid it while staying in
the range of real values (a huge constant would distort GP's regression). ``failure=fail`` tells
Optuna's FAIL state instead.

Accuracy is a constraint (``constraints_func`` of the samplers on Optuna < 5; Optuna 5 deprecated
it for ``Trial.set_constraint``, which is used when present, same semantics): value
``max(loss) / accuracy_threshold − 1`` when ``accuracy_threshold`` > 0, else +1 for an
ACCURACY_FAILED record and −1 otherwise (≤ 0 is feasible). NSGA-II optimises two objectives,
latency and accuracy loss (max over outputs), for the Pareto front.

When Optuna proposes a route already evaluated, it is told the known value and asked again, at
most ``max_retries`` times in a row; then a random unevaluated route is proposed instead (and
the retry allowance shrinks until the model proposes something new at the first try again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.records import CandidateState
from gptuner_core.routes import Route
from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy
from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._base import latency_of
from gptuner_core.strategies.random import random_indices


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord

_CONSTRAINT_ATTR = "gptuner_constraint"

COMMON_OPTIONS: dict[str, StrategyOption] = {
    "max_trials": StrategyOption(
        description="stop after this many routes of its own (0: until the space is exhausted)",
        default=0,
        type=int,
        minimum=0,
    ),
    "n_startup_trials": StrategyOption(
        description="random (or fast) trials before the model is used", default=10, type=int,
        minimum=0,
    ),
    "startup": StrategyOption(
        description="first routes: Optuna's random startup, or trtexec's fast one-offs",
        default="random",
        choices=("random", "fast"),
    ),
    "failure": StrategyOption(
        description="how a failed build is told: a latency penalty or Optuna's FAIL state",
        default="penalty",
        choices=("penalty", "fail"),
    ),
    "penalty_factor": StrategyOption(
        description="penalty = this × the slowest latency seen", default=2.0, type=float,
        minimum=1.0,
    ),
    "accuracy_threshold": StrategyOption(
        description=(
            "constraint: max accuracy loss / threshold − 1 ≤ 0 (0: use the accuracy gate's "
            "ACCURACY_FAILED state)"
        ),
        default=0.0,
        type=float,
        minimum=0.0,
    ),
    "max_retries": StrategyOption(
        description="re-asks when Optuna proposes an evaluated route, before a random one",
        default=20,
        type=int,
        minimum=0,
    ),
}


def import_optuna() -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class OptunaStrategy(Strategy):
    """Base for tpe / gp / nsga2: subclasses implement :meth:`make_sampler`."""

    multi_objective = False

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(space, **kw)
        for key in ("max_trials", "n_startup_trials", "max_retries"):
            if self.opts.get(key, 0) < 0:
                from gptuner_core.errors import StrategyError

                msg = f"strategy '{self.name}' option '{key}' must be >= 0 (got {self.opts[key]})"
                raise StrategyError(msg)
        self.optuna = import_optuna()
        self._dims = [t for t in space.terms if len(t.values) > 1]
        self._dists = {
            t.name: self.optuna.distributions.CategoricalDistribution(list(t.values))
            for t in self._dims
        }
        self._pinned = {t.name: t.values[0] for t in space.terms if len(t.values) == 1}
        directions = ["minimize", "minimize"] if self.multi_objective else ["minimize"]
        self.study = self.optuna.create_study(directions=directions, sampler=self.make_sampler())
        self._synced = 0
        self._pending: dict[str, Any] = {}  # route key -> optuna trial
        self._fast = iter(space.iter_routes("fast")) if self.opts.get("startup") == "fast" else None
        self._fallback = random_indices(space.count("full"), self.seed + 1)
        self._space_keys: set[str] = set()
        self._worst = 0.0
        self._retries = self.opts["max_retries"]
        # a warm start's failed routes (and, from an exhaustive source, its absent ones) are
        # proposed only when nothing else is left: another GPU's infeasible region
        # (the source's table, merged across sources as bo merges it: None where it only failed)
        from gptuner_core.strategies._transfer import source_table

        table = source_table(self.prior.results, self.key) if self.prior else {}
        exhaustive = bool(self.prior and self.prior.exhaustive)
        self._unlikely = lambda key: table[key] is None if key in table else exhaustive
        self._later: list[Route] = []  # fallback routes put off as unlikely

    # -- subclass hook ---------------------------------------------------------------------
    def make_sampler(self) -> Any:
        raise NotImplementedError

    def constraints_func(self, trial: Any) -> Sequence[float]:
        return (float(trial.user_attrs.get(_CONSTRAINT_ATTR, -1.0)),)

    def constraint_kwargs(self) -> dict[str, Any]:
        """``constraints_func`` for the sampler, unless ``Trial.set_constraint`` exists."""
        if hasattr(self.optuna.trial.Trial, "set_constraint"):
            return {}
        return {"constraints_func": self.constraints_func}

    def _constraint_attrs(self, cons: float) -> dict[str, Any]:
        if hasattr(self.optuna.trial.Trial, "set_constraint"):
            return {"constraints:accuracy": cons}
        return {"constraints": [cons]}

    # -- routes <-> params -----------------------------------------------------------------
    def route_of(self, params: dict[str, Any]) -> Route:
        values = {**self._pinned, **params}
        return Route(tuple((t.name, str(values[t.name])) for t in self.space.terms))

    def params_of(self, route: Route) -> dict[str, str] | None:
        """Params of a route of the full space, or None when it lies outside."""
        own = route.as_dict()
        for t in self.space.terms:
            value = own.get(t.name, self._defaults.get(t.name))
            if value not in t.values:
                return None
        return {t.name: own.get(t.name, self._defaults[t.name]) for t in self._dims}

    # -- values ----------------------------------------------------------------------------
    def constraint(self, rec: CandidateRecord) -> float:
        threshold = self.opts["accuracy_threshold"]
        if threshold > 0 and rec.accuracy is not None and rec.accuracy.losses:
            return max(rec.accuracy.losses.values()) / threshold - 1.0
        return 1.0 if rec.state is CandidateState.ACCURACY_FAILED else -1.0

    def outcome(self, rec: CandidateRecord) -> tuple[Any, list[float] | None, float]:
        """(state, values, constraint) to tell Optuna for a record."""
        ts = self.optuna.trial.TrialState
        lat = latency_of(rec)
        if lat is not None:
            self._worst = max(self._worst, lat)
        if lat is None:
            if self.opts["failure"] == "fail" or self._worst <= 0:
                return ts.FAIL, None, 1.0
            lat = self._worst * self.opts["penalty_factor"]
            values = [lat, 1.0] if self.multi_objective else [lat]
            return ts.COMPLETE, values, 1.0
        if self.multi_objective:
            loss = 0.0
            if rec.accuracy is not None and rec.accuracy.losses:
                loss = max(rec.accuracy.losses.values())
            return ts.COMPLETE, [lat, loss], self.constraint(rec)
        return ts.COMPLETE, [lat], self.constraint(rec)

    def _tell(self, trial: Any, rec: CandidateRecord) -> None:
        state, values, cons = self.outcome(rec)
        trial.set_user_attr(_CONSTRAINT_ATTR, cons)
        if hasattr(trial, "set_constraint"):
            trial.set_constraint("accuracy", cons)
        self.study.tell(trial, values, state=state)

    def _add(self, rec: CandidateRecord) -> None:
        try:
            params = self.params_of(Route.parse(rec.requested_route))
        except Exception:  # noqa: BLE001 - a foreign route is simply not told
            return
        if params is None:
            return
        state, values, cons = self.outcome(rec)
        self.study.add_trial(
            self.optuna.trial.create_trial(
                params=params,
                distributions=self._dists,
                values=values,
                state=state,
                user_attrs={_CONSTRAINT_ATTR: cons},
                system_attrs=self._constraint_attrs(cons),
            )
        )

    def _sync(self, history: Sequence[CandidateRecord]) -> None:
        for rec in history[self._synced :]:
            if not rec.state.is_finished():
                continue
            key = self.record_key(rec)
            if key is None:
                continue
            trial = self._pending.pop(key, None)
            if trial is not None:
                self._tell(trial, rec)
            else:
                self._add(rec)
        self._synced = len(history)

    # -- ask -------------------------------------------------------------------------------
    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        self._sync(history)
        decided, first = self.opening(history, pending)
        if decided:
            return first
        seen = self.taken(history, pending)
        known = self.by_key(history)
        if self._fast is not None:
            for route in self._fast:
                key = self.key(route)
                if key not in seen and not self._unlikely(key):
                    self._own += 1
                    return Proposal(route=route, info={"search": self.name, "startup": "fast"})
            self._fast = None
        if self.opts.get("climb"):
            route = self._climb(history, seen)
            if route is not None:
                self._own += 1
                return Proposal(route=route, info={"search": self.name, "phase": "climb"})
        if not self._dists:
            return None
        for attempt in range(self._retries + 1):
            trial = self.study.ask(self._dists)
            route = self.route_of(trial.params)
            key = self.key(route)
            if key not in seen and not self._unlikely(key):
                self._pending[key] = trial
                self._own += 1
                if attempt == 0:
                    self._retries = self.opts["max_retries"]
                return Proposal(
                    route=route,
                    info={"search": self.name, "trial": trial.number, "retries": attempt},
                )
            if key in known:
                self._tell(trial, known[key])
            else:
                self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        # the model is stuck on evaluated routes (a nearly exhausted space): ask it less often
        self._retries = max(1, self._retries // 4)
        for index in self._fallback:
            route = self.space.route_at("full", index)
            key = self.key(route)
            if key in seen:
                continue
            if self._unlikely(key):  # the source's failures last
                self._later.append(route)
                continue
            self._own += 1
            return Proposal(route=route, info={"search": self.name, "fallback": "random"})
        for route in self._later:
            if self.key(route) not in seen:
                self._own += 1
                return Proposal(route=route, info={"search": self.name, "fallback": "random"})
        return None

    def _climb(self, history: Sequence[CandidateRecord], seen: set[str]) -> Route | None:
        """An unevaluated one-off neighbour of the best eligible route so far, if any.

        Knobs often only matter together (skipping the first conv's quantization helps only when
        quantization is on): one-offs around the baseline cannot see that, one-offs around the
        incumbent can. Climbing stops at a local optimum and the model takes over; it resumes
        whenever the model finds a better incumbent.
        """
        best: tuple[float, dict[str, str]] | None = None
        for rec in history:
            lat = latency_of(rec) if rec.eligible else None
            if lat is None:
                continue
            try:
                params = self.params_of(Route.parse(rec.requested_route))
            except Exception:  # noqa: BLE001 - a foreign route cannot be climbed from
                continue
            if params is not None and (best is None or lat < best[0]):
                best = (lat, params)
        if best is None:
            return None
        params = best[1]
        for term in reversed(self._dims):  # trtexec's fast order: last knob first
            for value in term.values:
                if value == params[term.name]:
                    continue
                route = self.route_of({**params, term.name: value})
                key = self.key(route)
                if key not in seen and not self._unlikely(key):
                    return route
        return None

    def planned(self) -> int | None:
        return self.capped_plan(self.space.count("full"))
