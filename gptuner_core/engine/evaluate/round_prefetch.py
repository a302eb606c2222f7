"""Re-validation rounds at the speed of the device: a round's processes start together.

With overlap on (``engine.scale.overlap``), ``revalidate_sequential`` hands
``measure_fresh.prefetch`` the order of the round about to run and of every later round (as they
will be if nothing is decided meanwhile), and as many of those re-measurements as there are build
cores start at once, the rest as places free up (:class:`RoundPrefetch`): each process is forked
from the fork server, loads its route from the candidate's warm Inductor cache on the build cores
*without running it* (``Backend.load_ahead``: nothing reaches the device before its turn), records
the identity of what it compiled, then waits for its turn (``engine.process.turn``).
``IsolatedEvaluator.remeasure`` gives the turns one at a time in the rounds' order: one
measurement on the device at a time, on the measuring cores. The first turn of a round begins with
a warm-up: the loaded processes of that round and of the next make their first calls together, the
device shared and nothing measured (``engine.process.turn``'s warm-up step, as screening's), then
each measures alone in its turn. Every build has ended by then, so
the loading of later rounds runs on cores nothing else needs while earlier rounds measure: a round
costs about its measurements, not a compile per process (the processes stay fresh per round). A
prefetched process nobody asked for is told to exit (``cancel``) before the re-validation returns.
A route whose loading runs work on the device (``Backend.load_uses_device``: torch's freezing and
autotuning routes on a GPU) is never started ahead of its turn: its processes load while the device
is held for it, when nothing is measured. Its turn then starts its processes of the next rounds
too (:data:`IN_TURN_BATCH` in all, the hint's ``in_turn`` calls), and gives the turn once every one
of them has loaded: each stays a fresh process of its own round, and the later rounds find theirs
loaded instead of compiling again in their turn (a freezing route's round on the H100: 12-33 s, of
which about 2 s measured).

The line can start before re-validation does (issue 38: round 0 waited for its processes' compile
otherwise): ``engine.decide.finish.start_rounds_ahead`` hints the first rounds of the default route
as soon as it was built (every study re-measures it), while the other candidates still build; once
every candidate has been built, the rounds of the default and of the finalists as screening has
ranked them so far (results not committed yet included), and the first look's rounds of every
candidate still waiting for its result (any of them may become a finalist), round by round, while
the last candidates are still measured one at a time.
Each hint names every process still wanted: one it no longer names (a finalist that screening or a
decision dropped) is told to exit, and its place goes to the next in line.

The earliest round comes first on the CPU too: a process loads at the niceness :func:`niceness`
gives its round's distance from the first round of the hint (builds run at 0), so the round about
to run is ready before later rounds take the cores, and loading round processes yield to the
builds still running. Its turn restores its priority where the system allows it (it measures on
the measuring cores, which nothing else uses).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.engine.process.isolation import last_phase
from gptuner_core.engine.process.isolation import write_json_atomic
from gptuner_core.engine.process.turn import READY
from gptuner_core.engine.process.turn import TURN
from gptuner_core.engine.process.turn import TURN_ALONE
from gptuner_core.engine.process.turn import WAIT


if TYPE_CHECKING:
    from gptuner_core.engine.evaluate.protocol import RoundRunner
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import ChildResult


#: a queued call: its record, sampling scale, niceness and round
_Queued = tuple["CandidateRecord", float, int, int]
#: niceness added per round between a process's round and the hint's first round
NICE_PER_ROUND = 4
#: niceness of the first round's processes: below the builds (0) that may still run
FIRST_ROUND_NICE = 2
#: processes of a route that loads on the device started in one of its turns (that round's and
#: the next ones'): a study's first look is four rounds
IN_TURN_BATCH = 4
#: a round's first turn warms up the loaded processes of its round and of this many rounds after
WARM_AHEAD_ROUNDS = 1
#: each hint's time and calls, a JSON line each, under the study's folder
HINTS = "round_hints.jsonl"


def niceness(rounds_ahead: int) -> int:
    """The CPU priority (``nice``) of a process whose round comes ``rounds_ahead`` rounds after
    the first round of the hint: 2, 6, 10, 14, 18, 19..."""
    return min(19, FIRST_ROUND_NICE + NICE_PER_ROUND * max(rounds_ahead, 0))


@dataclass(frozen=True, slots=True)
class RoundCall:
    """One re-measurement a hint asks for: ``record`` measured in the work folder ``purpose``
    (the round's process) with the sampling settings scaled by ``scale``, in re-validation round
    ``round`` (what orders the processes on the CPU)."""

    record: CandidateRecord
    purpose: str
    scale: float
    round: int


class _Pending:
    """One re-measurement process of round ``round`` started ahead, waiting for its turn after
    loading at niceness ``nice``; ``warming`` once granted its warm-up (:meth:`warm_up`)."""

    def __init__(self, ev: RoundRunner, record: CandidateRecord, purpose: str, scale: float,
                 build_cpus: tuple[int, ...], target: str, nice: int = 0, round: int = 0) -> None:  # noqa: A002
        self.purpose, self.round, self.warming = purpose, round, False
        self.workdir = ev.ctx.workspace.root / purpose
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in (TURN, TURN_ALONE):
            (self.workdir / name).unlink(missing_ok=True)
        job = ev.remeasure_job(record, scale).replace(
            turn={"build_cpus": list(build_cpus), "wait": True, "nice": int(nice)})
        # loading and, once warmed, waiting for its own turn: as long as the rounds before it take
        timeouts = {**ev._timeouts(), "wait": float("inf"), READY: float("inf")}  # noqa: SLF001
        self.res: ChildResult | None = None

        def run() -> None:
            self.res = ev._run(target, job, self.workdir, timeouts)  # noqa: SLF001

        self.thread = threading.Thread(target=run, name=f"gptuner-round-{purpose}", daemon=True)
        self.thread.start()

    def warm_up(self, cpus: tuple[int, ...]) -> None:
        """Grant its first calls on ``cpus``, the device shared (``turn.WARMUP``): it enters
        ``ready`` once done and measures at :meth:`result`."""
        write_json_atomic(self.workdir / TURN, {"cpus": list(cpus), "warmup": True}, durable=False)
        self.warming = True

    def warmed(self) -> bool:
        """Its warm-up is done (it waits for the device alone), or it has ended."""
        return last_phase(self.workdir) == READY or not self.alive()

    def result(self, cpus: tuple[int, ...]) -> ChildResult:
        """Its turn on ``cpus``, the device alone: its samples (after its first calls, where it
        was not warmed up)."""
        write_json_atomic(self.workdir / (TURN_ALONE if self.warming else TURN), {"cpus": list(cpus)},
                          durable=False)
        self.thread.join()
        assert self.res is not None
        return self.res

    def cancel(self, *, wait: bool = True) -> None:
        """Tell the process to exit (it does once loaded, or warmed up); ``wait``: until it has."""
        write_json_atomic(self.workdir / (TURN_ALONE if self.warming else TURN), {"cancel": True},
                          durable=False)
        if wait:
            self.thread.join(60)

    def alive(self) -> bool:
        return self.thread.is_alive()

    def loaded(self) -> bool:
        """Its process has loaded and waits for its turn (or has ended: nothing to wait for)."""
        return last_phase(self.workdir) == WAIT or not self.alive()

    def join(self, timeout: float | None = None) -> None:
        self.thread.join(timeout)


def read_hints(study: Path) -> list[tuple[float, list[str]]]:
    """The hints a study's line received (:data:`HINTS`): ``(time.time(), [round folder names])``."""
    import json

    try:
        lines = (Path(study) / HINTS).read_text(encoding="utf-8").splitlines()
        return [(float(h["time"]), [c.rsplit("/", 1)[-1] for c in h["calls"]]) for h in map(json.loads, lines)]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def room(build_cpus: tuple[int, ...]) -> int:
    """How many round processes may load at once: one per build core (each compiles with one
    thread, and every build has ended by the time re-validation runs), at least two."""
    return max(len(build_cpus), 2)


class RoundPrefetch:
    """The prefetched re-measurements of one evaluator, by work folder (``purpose``).

    ``start`` takes the calls (:class:`RoundCall`) of the current round and of every later one
    (``measure_fresh``'s ``prefetch`` hint, in order) and starts as many as :func:`room` allows,
    each at the :func:`niceness` of its round's distance from the hint's first round; the rest
    wait in line and start as earlier ones are taken. A call taken before it started starts at
    once. The hint's ``in_turn`` calls (routes that load on the device) start only when one of
    them is taken: that one and the next in line, :data:`IN_TURN_BATCH` in all, and the taker
    waits until all have loaded. Each hint names every call still wanted: a started one it
    leaves out is cancelled, a queued one dropped. ``started`` keeps when each process was
    started (``time.time()``), ``nice`` at which niceness."""

    def __init__(self, ev: RoundRunner, build_cpus: tuple[int, ...], measure_cpus: tuple[int, ...],
                 target: str, capacity: int | None = None) -> None:
        self.ev, self.build_cpus, self.measure_cpus, self.target = ev, build_cpus, measure_cpus, target
        self.capacity = capacity if capacity is not None else room(build_cpus)
        self._pending: dict[str, _Pending] = {}
        self._queued: dict[str, _Queued] = {}
        self._in_turn: dict[str, _Queued] = {}  # started by a turn
        self._lock = threading.Lock()
        self.started: dict[str, float] = {}
        self.nice: dict[str, int] = {}
        self._leaving: dict[str, _Pending] = {}  # cancelled, maybe still loading, by purpose
        self.hints: list[tuple[float, tuple[str, ...]]] = []  # (time.time(), the calls named)

    def _launch(self, purpose: str, line: dict[str, _Queued] | None = None) -> _Pending:
        record, scale, nice, round_ = (self._queued if line is None else line).pop(purpose)
        self.started[purpose], self.nice[purpose] = time.time(), nice
        self._pending[purpose] = _Pending(self.ev, record, purpose, scale, self.build_cpus, self.target,
                                          nice, round=round_)
        return self._pending[purpose]

    def _fill(self) -> None:
        for purpose in list(self._queued):
            if len(self._pending) >= self.capacity:
                return
            if not self._busy(purpose):
                self._launch(purpose)

    def _busy(self, purpose: str) -> bool:
        """A cancelled process of this purpose still runs in its folder (a finalist dropped,
        then wanted again): the new one starts after it has gone."""
        old = self._leaving.get(purpose)
        if old is not None and not old.alive():
            del self._leaving[purpose]
            return False
        return old is not None

    def start(self, calls: list[RoundCall], in_turn: list[RoundCall] | tuple[RoundCall, ...] = ()) -> None:
        wanted = {call.purpose for call in [*calls, *in_turn]}
        first = min((call.round for call in calls), default=0)
        self._note_hint(wanted)
        with self._lock:
            dropped = [self._pending.pop(p) for p in list(self._pending) if p not in wanted]
            self._queued = {call.purpose: (call.record, call.scale, niceness(call.round - first), call.round)
                            for call in calls if call.purpose not in self._pending}  # in the hint's order
            self._in_turn = {call.purpose: (call.record, call.scale, 0, call.round)  # they load in a turn
                             for call in in_turn if call.purpose not in self._pending}
            for pending in dropped:  # it exits once loaded; nothing waits for that here
                pending.cancel(wait=False)
                self._leaving[pending.purpose] = pending
            self._fill()

    def _note_hint(self, wanted: set[str]) -> None:
        """Keep when each hint came and what it named (``hints``; in a study also one JSON line
        in ``round_hints.jsonl``: when the finalists' processes were asked for, beside
        when they started)."""
        hint = (time.time(), tuple(sorted(wanted)))
        self.hints.append(hint)
        ctx = getattr(self.ev, "ctx", None)
        if ctx is not None:
            import contextlib
            import json

            with contextlib.suppress(OSError):
                path = ctx.workspace.root / HINTS
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"time": round(hint[0], 3), "calls": list(hint[1])}) + "\n")

    def take(self, purpose: str) -> ChildResult | None:
        old = self._leaving.get(purpose)
        if old is not None:  # cancelled before: its process leaves the folder first
            old.join()
        batch: list[_Pending] = []
        with self._lock:
            self._busy(purpose)
            if purpose in self._queued:  # its turn came before it could start: start it now
                self._launch(purpose)
            elif purpose in self._in_turn:  # loads on the device: with the next rounds' processes
                batch = self._launch_in_turn(purpose)
            pending = self._pending.pop(purpose, None)
            warm = self._warm_up(pending) if pending is not None and not batch else []
            self._fill()  # a place is free: the next in line starts loading
        while not all(p.loaded() for p in batch):  # the device is ours: nothing measures meanwhile
            time.sleep(0.02)
        while not all(p.warmed() for p in warm):  # likewise while they warm up
            time.sleep(0.005)
        return pending.result(self.measure_cpus) if pending is not None else None

    def _warm_up(self, pending: _Pending) -> list[_Pending]:
        """The first turn of a round (the caller holds the device): ``pending`` and the other
        processes of its round and of the next :data:`WARM_AHEAD_ROUNDS` that have loaded make
        their first calls together, the device shared, on the build cores (lazy module loading,
        cuDNN's and cuBLAS's set-up, CUDA graphs recorded: in the H100's ConvNeXt-Tiny rounds
        as long as the samples); each then measures alone in its own turn. A process still
        loading, or warmed already, is left as it is."""
        if pending.warming or not pending.alive() or not pending.loaded():
            return []
        last = pending.round + WARM_AHEAD_ROUNDS
        warm = [pending, *(p for p in self._pending.values()
                           if not p.warming and p.round <= last and p.alive() and p.loaded())]
        for p in warm:
            p.warm_up(self.build_cpus)
        return warm

    def _launch_in_turn(self, purpose: str) -> list[_Pending]:
        """``purpose`` and the next :data:`IN_TURN_BATCH` - 1 calls loading on the device,
        started now (the caller holds the device for ``purpose``'s turn)."""
        later = [p for p in self._in_turn if p != purpose and not self._busy(p)]
        return [self._launch(p, self._in_turn) for p in [purpose, *later[: IN_TURN_BATCH - 1]]]

    def cancel_all(self) -> None:
        with self._lock:
            left, self._pending, self._queued, self._in_turn = list(self._pending.values()), {}, {}, {}
            leaving, self._leaving = list(self._leaving.values()), {}
        for pending in left:
            pending.cancel()
        for pending in leaving:  # cancelled earlier: no process is left behind
            pending.join(60)


def attach(measure_fresh: Any, evaluator: Any, calls_of: Any) -> Any:
    """Give ``measure_fresh`` a ``prefetch(order)`` hint when ``evaluator`` prefetches rounds:
    ``calls_of(order)`` -> ``[RoundCall, ...]`` for the round's ``(number, round_index)`` pairs."""
    start = getattr(evaluator, "prefetch_rounds", None)
    if start is not None and evaluator.prefetching():
        measure_fresh.prefetch = lambda order: start(calls_of(order))
    return measure_fresh
