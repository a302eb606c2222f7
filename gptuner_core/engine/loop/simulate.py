"""``simulate``: "what would strategy X have found with budget B on my sweep?".

It is the tuning loop (``engine.loop.loop.run_loop``) with the recorded evaluator
(``engine.evaluate.recorded``) and an in-memory sink: the same proposals, dedupe rule, budgets and
re-measurements as a real study, answered from a recording.

The study's pick is the eligible route with the lowest *observed* median (what the strategy saw);
its value is the *recorded* speed-up of that route, so a strategy fooled by short measurements
pays for it. ``found_optimum_fraction`` = that speed-up / the best recorded speed-up.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.engine.evaluate.recorded import RecordedEvaluator
from gptuner_core.engine.loop.loop import Budget
from gptuner_core.engine.loop.loop import run_loop
from gptuner_core.engine.loop.loop_parts import QuietSink
from gptuner_core.errors import ConfigError
from gptuner_core.recording import Recording
from gptuner_core.recording import load_recording
from gptuner_core.routes import Route


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Sequence

    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.records import CandidateRecord
    from gptuner_core.strategies import Proposal
    from gptuner_core.strategies.warm_start import Prior


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceStep:
    builds: int
    number: int
    route: str
    state: str
    observed_ms: float | None
    recorded_speedup: float | None
    best_speedup: float
    info: dict[str, Any]
    remeasure: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationResult:
    """Outcome of one replayed search.

    ``best_speedup``: recorded speed-up of the route the study would pick; ``builds_used``:
    candidates evaluated (re-measurements excluded); ``found_optimum_fraction``: best_speedup /
    the recording's optimum; ``missing``: proposed routes absent from the recording;
    ``duplicates``: proposals skipped because their route was already evaluated.
    """

    strategy: str
    seed: int
    budget: int
    best_speedup: float
    best_route: str
    builds_used: int
    remeasurements: int
    found_optimum_fraction: float
    optimum_speedup: float
    optimum_route: str
    space_size: int
    missing: tuple[str, ...]
    duplicates: tuple[str, ...]
    exhausted: bool
    trace: tuple[TraceStep, ...]

    def to_json(self) -> dict[str, Any]:
        import dataclasses

        return dataclasses.asdict(self)


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """BLAS on one thread inside (``threadpoolctl`` when installed, else nothing): a replay's
    matrices are small, and BLAS threads only contend (2 seeds of a 22,272-route space took
    8.7 s with them, 2.1 s without, on 2 cores)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


#: replay's default budget: 20 % of the space, at most this many builds (20 % of a 22,272-route
#: space took 4 minutes per seed; 200 builds take seconds)
DEFAULT_BUDGET_SHARE = 0.2
DEFAULT_BUDGET_BUILDS = 200


def default_budget(space_size: int) -> int:
    """Replay's budget when none is given: 20 % of the space, at most 200 builds (at least 1)."""
    return max(1, min(DEFAULT_BUDGET_BUILDS, math.ceil(DEFAULT_BUDGET_SHARE * space_size)))


def parse_budget(budget: int | float | str, space_size: int) -> int:
    """``12`` (builds), ``"12"``, ``"20%"`` or ``0.2`` (a fraction of the full space)."""
    share = 0.0  # a percentage given as text, checked outside the parse below
    try:
        if isinstance(budget, str):
            text = budget.strip()
            if text.endswith("%"):
                share = float(text[:-1])
                n = math.ceil(share / 100.0 * space_size)
            else:
                n = int(text)
        elif isinstance(budget, float) and 0 < budget < 1:
            n = math.ceil(budget * space_size)
        else:
            n = int(budget)
    except (ValueError, OverflowError):
        msg = f"budget must be a number of builds or a percentage like '20%' (got {budget!r})"
        raise ConfigError(msg) from None
    if share > 100:
        msg = f"budget must be at most 100% of the space (got {budget!r} of a {space_size}-route space)"
        raise ConfigError(msg)
    if n < 1:
        msg = f"budget must allow at least 1 build (got {budget!r} of a {space_size}-route space)"
        raise ConfigError(msg)
    return n


class _TraceSink(QuietSink):
    """Keeps the trace of a simulated search (the loop's :class:`~engine.loop.loop.Sink`).

    The study's pick is kept up to date per finished candidate (one comparison), and recomputed
    over the history only when a re-measurement replaces a record: no per-proposal scan.
    """

    def __init__(self, recording: Recording, evaluator: RecordedEvaluator) -> None:
        self.recording = recording
        self.evaluator = evaluator
        self.trace: list[TraceStep] = []
        self.duplicates: list[str] = []
        self.remeasurements = 0
        self._history: list[CandidateRecord] = []
        self._best: tuple[float, str] | None = None  # (observed median, route key) of the pick
        self._best_speedup = 0.0

    @property
    def picked(self) -> str | None:
        """Route key of the study's pick so far (lowest observed median), ``None`` before one."""
        return self._best[1] if self._best else None

    @property
    def best_speedup(self) -> float:
        """Recorded speed-up of :attr:`picked` (0 before one)."""
        return self._best_speedup

    def _offer(self, rec: CandidateRecord) -> None:
        if rec.eligible and rec.latency is not None:
            cand = (rec.latency.median_ms, Route.parse(rec.requested_route).key(self.recording.db))
            if self._best is None or cand < self._best:
                self._best = cand
                self._best_speedup = self.recording.speedup(self.evaluator.index[cand[1]]) or 0.0

    def _step(self, rec: CandidateRecord, route: str, info: dict[str, Any], remeasure: bool) -> None:
        found = self.evaluator.lookup(route)
        self.trace.append(TraceStep(
            builds=len(self._history), number=rec.number, route=route, state=rec.state.value,
            observed_ms=rec.latency.median_ms if rec.latency else None,
            recorded_speedup=self.recording.speedup(found) if found is not None else None,
            best_speedup=self._best_speedup, info=info, remeasure=remeasure,
        ))

    def finished(self, rec: CandidateRecord, history: list[CandidateRecord]) -> None:
        self._history = history
        self._offer(rec)
        self._step(rec, rec.requested_route, dict(rec.strategy_info), False)

    def replaced(self, rec: CandidateRecord) -> None:
        self.remeasurements += 1
        # the loop updates the history after telling the sink: this record stands in for its own
        self._best, self._best_speedup = None, 0.0
        for old in self._history:
            self._offer(rec if old.number == rec.number else old)
        self._step(rec, rec.requested_route, dict(rec.strategy_info), True)

    def skipped(self, proposal: Proposal) -> None:
        self.duplicates.append(str(proposal.route))

    def phase(self, route: str, phase: str, history: list[CandidateRecord]) -> None:
        self._history = history


def simulate(
    strategy_name: str,
    recorded: str | Path | Recording,
    budget: int | float | str,
    seed: int = 0,
    *,
    warm_start: Sequence[Route] = (),
    prior: Prior | None = None,
    **options: Any,
) -> SimulationResult:
    """Replay ``strategy_name`` on a recorded study for at most ``budget`` builds.

    ``prior``: results of another study or recording of the same knobs (``--warm-start``),
    for strategies that model the space.
    """
    from gptuner_core.strategies import get_strategy

    recording = load_recording(recorded)
    space = recording.expression.count("full")
    n_budget = parse_budget(budget, space)
    strategy = get_strategy(
        strategy_name, recording.expression, seed=seed, db=recording.db,
        warm_start=warm_start, prior=prior, budgeted=True, **options,
    )
    evaluator = RecordedEvaluator(recording)
    sink = _TraceSink(recording, evaluator)
    history: list[CandidateRecord] = []
    end = run_loop(
        strategy=strategy, evaluator=evaluator, history=history,
        key=lambda text: Route.parse(text).key(recording.db),
        budget=Budget(max_candidates=n_budget), sink=sink, space_size=space, search=strategy_name,
    )
    picked = sink.picked
    opt, opt_rec = recording.optimum()
    best = sink.best_speedup
    return SimulationResult(
        strategy=strategy_name, seed=seed, budget=n_budget, best_speedup=best,
        best_route=picked or "", builds_used=len(history), remeasurements=sink.remeasurements,
        found_optimum_fraction=best / opt if opt > 0 else 0.0, optimum_speedup=opt,
        optimum_route=opt_rec.requested_route, space_size=space,
        missing=tuple(evaluator.missing), duplicates=tuple(sink.duplicates),
        exhausted=end.exhausted, trace=tuple(sink.trace),
    )


def pick(history: Sequence[CandidateRecord], db: KnobDatabase | None = None) -> str | None:
    """Key of the eligible record with the lowest observed median."""
    best: tuple[float, str] | None = None
    for rec in history:
        if rec.eligible and rec.latency is not None:
            cand = (rec.latency.median_ms, Route.parse(rec.requested_route).key(db))
            if best is None or cand < best:
                best = cand
    return best[1] if best else None
