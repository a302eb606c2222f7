"""The strategy contract: ask for the next route, be told how it went.

A strategy never imports a backend and never touches hardware: the tuner asks it for a
:class:`Proposal`, runs the candidate in an isolated process, stores the record and tells the
strategy. Contract (checked by ``tests/strategies_tests``):

* the first proposal is the default route of the space (baseline, 1.0x);
* a route whose :meth:`Route.key` was already evaluated in the study is never proposed again
  (``history`` holds every record of the study, including those of an earlier, resumed run);
* ``ask`` returns ``None`` when the strategy is done; the tuner enforces budgets on top;
* routes given as ``warm_start`` (best routes of earlier studies) come right after the baseline;
  ``prior`` (every result of those studies, :class:`~gptuner_core.strategies.warm_start.Prior`)
  is there for strategies that model the space; the others ignore it;
* ``pending`` holds the proposals in flight (asked, not yet in ``history``: parallel builds or
  workers); a strategy never proposes a route whose key is evaluated *or* pending
  (:meth:`Strategy.taken`). With proposals in flight, ``None`` means "nothing to propose until
  one of them is told" (a phase or rung that needs their results); the loop asks again after the
  next result and ends only on ``None`` with nothing in flight.

``history`` passed to :meth:`Strategy.ask` is the source of truth (it survives a resume);
:meth:`Strategy.tell` is an optional hook. Helpers here (:meth:`Strategy.key`,
:meth:`Strategy.evaluated`, :meth:`Strategy.prelude`) keep the dedupe rule in one place.

Options are declared as data (``options``: name -> :class:`StrategyOption`) and validated with a
message listing the allowed names; the same declaration drives CLI help and the dashboard form.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

from gptuner_core.errors import InvalidRouteError
from gptuner_core.errors import StrategyError
from gptuner_core.options import Option
from gptuner_core.options import validate_options as _validate
from gptuner_core.routes import Route


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.records import CandidateRecord
    from gptuner_core.strategies.warm_start import Prior


#: a strategy's declared option (the one option record of ``gptuner_core.options``)
StrategyOption = Option


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """A route to evaluate, with hints for the tuner.

    ``info`` is stored with the candidate (e.g. ``{"phase": 2}``). ``measure_scale`` scales the
    measurement budget (racing strategies measure briefly first, then longer for contenders).
    ``build_timeout_factor`` kills builds slower than that many times the default's build time.
    ``remeasure_of`` asks for a longer measurement of an existing candidate (that number) instead
    of a new build: the loop re-measures it and replaces its record.
    """

    route: Route
    info: dict[str, Any] = field(default_factory=dict)
    measure_scale: float = 1.0
    build_timeout_factor: float | None = None
    remeasure_of: int | None = None


def validate_options(
    name: str, declared: dict[str, Option], given: dict[str, Any]
) -> dict[str, Any]:
    """Fill defaults, coerce types, reject unknown names and values outside ``choices``."""
    return _validate("strategy", name, declared, given, error=StrategyError)


class Strategy(abc.ABC):
    """Base class: subclasses set ``name``, ``summary``, ``options`` and implement ``ask``."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    options: ClassVar[dict[str, StrategyOption]] = {}

    def __init__(
        self,
        space: Expression,
        *,
        seed: int = 0,
        db: KnobDatabase | None = None,
        warm_start: Sequence[Route] = (),
        prior: Prior | None = None,
        **options: Any,
    ) -> None:
        self.space = space
        self.prior = prior
        self.seed = seed
        self.db = db
        self.opts = validate_options(self.name, self.options, options)
        self._own = 0  # proposals the strategy made itself (the prelude's are not counted)
        self._defaults = dict(zip(space.names, space.defaults, strict=True))
        if db is not None:
            self._defaults.update({k.name: k.default for k in db})
        self.warm_start = tuple(self._restrict(r) for r in warm_start)
        self._keys_cache: tuple[int, set[str]] = (-1, set())

    # -- helpers shared by every strategy --------------------------------------------------
    def _restrict(self, route: Route) -> Route:
        """Keep only the knobs of this space (a warm-start route of another study)."""
        names = set(self.space.names)
        return Route(tuple((n, v) for n, v in route.assignments if n in names))

    def key(self, route: Route | str) -> str:
        """Dedupe identity, equal to ``Route.key(db)``: sorted tokens, defaults dropped."""
        if isinstance(route, str):
            route = Route.parse(route)
        return " ".join(
            f"{n}={v}" for n, v in sorted(route.assignments) if self._defaults.get(n) != v
        )

    def record_key(self, record: CandidateRecord) -> str | None:
        try:
            return self.key(record.requested_route)
        except InvalidRouteError:
            return None

    def evaluated(self, history: Sequence[CandidateRecord]) -> set[str]:
        """Keys of every route in ``history`` (any state: a crash is not retried)."""
        n, keys = self._keys_cache
        if n > len(history):
            n, keys = 0, set()
        for rec in history[max(n, 0) :]:
            k = self.record_key(rec)
            if k is not None:
                keys.add(k)
        self._keys_cache = (len(history), keys)
        return keys

    def pending_keys(self, pending: Sequence[Proposal]) -> set[str]:
        """Keys of the proposals in flight (re-measurements excluded: they build nothing)."""
        return {self.key(p.route) for p in pending if p.remeasure_of is None}

    def taken(self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()) -> set[str]:
        """Keys that must not be proposed: evaluated in ``history`` or in flight."""
        seen = self.evaluated(history)
        return seen | self.pending_keys(pending) if pending else seen

    def by_key(self, history: Sequence[CandidateRecord]) -> dict[str, CandidateRecord]:
        """Latest record per route key (a race re-measurement replaces the short one)."""
        out: dict[str, CandidateRecord] = {}
        for rec in history:
            k = self.record_key(rec)
            if k is not None:
                out[k] = rec
        return out

    def prelude(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        """The baseline, then each warm-start route, unless already evaluated or in flight."""
        seen = self.taken(history, pending)
        base = self.space.baseline()
        if self.key(base) not in seen:
            return Proposal(route=base, info={"phase": "baseline"})
        for i, route in enumerate(self.warm_start):
            if self.key(route) not in seen:
                return Proposal(route=route, info={"phase": "warm_start", "warm_index": i})
        return None

    def opening(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> tuple[bool, Proposal | None]:
        """How every ``ask`` capped by ``max_trials`` starts: ``(True, proposal)`` for the
        prelude's route, ``(True, None)`` once ``max_trials`` own proposals (``_own``) were made,
        ``(False, None)`` when it is the strategy's own turn."""
        first = self.prelude(history, pending)
        if first is not None:
            return True, first
        limit = self.opts.get("max_trials", 0)
        return (True, None) if limit and self._own >= limit else (False, None)

    def capped_plan(self, routes: int) -> int:
        """Planned candidates: the prelude and ``routes`` own ones, at most ``max_trials`` own."""
        total = routes + 1 + len(self.warm_start)
        limit = self.opts.get("max_trials", 0)
        return min(total, limit + 1 + len(self.warm_start)) if limit else total

    def baseline_record(self, history: Sequence[CandidateRecord]) -> CandidateRecord | None:
        return self.by_key(history).get(self.key(self.space.baseline()))

    # -- the contract ----------------------------------------------------------------------
    @abc.abstractmethod
    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        """Next route to evaluate (never one evaluated or in ``pending``), or ``None`` when done
        (or, with proposals in flight, nothing until one of them is told)."""

    def tell(self, record: CandidateRecord) -> None:  # noqa: B027 - optional hook
        """Called with every finished record, in order."""

    def planned(self) -> int | None:
        """How many candidates this strategy intends to evaluate, if known (for progress/ETA)."""
        return None


def latency_of(record: CandidateRecord | None) -> float | None:
    """Median latency in ms of a record that ran (any state but a failure), else ``None``."""
    if record is None or record.latency is None or record.state.is_failure():
        return None
    value = record.latency.median_ms
    return value if value > 0 else None
