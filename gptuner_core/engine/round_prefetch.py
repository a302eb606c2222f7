"""Re-validation rounds at the speed of the device: a round's processes start together.

With overlap on (``engine.scale.overlap``), when a round's order is known
(``revalidate_sequential`` hands it to ``measure_fresh.prefetch``) every re-measurement of that
round starts at once: each process is forked from the fork server, loads its route from the
candidate's warm Inductor cache on the build cores, then waits for its turn
(``engine.process.turn``). ``IsolatedEvaluator.remeasure`` then gives the turns one at a time
in the round's order: one measurement on the device at a time, on the measuring cores, while
the loading of the next ones is already done. A round costs about one load plus its
measurements instead of the sum of both. A prefetched process nobody asked for is told to exit
(``cancel``) before the re-validation returns.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.engine.process.isolation import write_json_atomic
from gptuner_core.engine.process.turn import TURN


if TYPE_CHECKING:
    from gptuner_core.engine.evaluator import IsolatedEvaluator
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import ChildResult


class _Pending:
    """One re-measurement process started ahead, waiting for its turn after loading."""

    def __init__(self, ev: IsolatedEvaluator, record: CandidateRecord, purpose: str, scale: float,
                 build_cpus: tuple[int, ...], target: str) -> None:
        self.workdir = ev.ctx.workspace.root / purpose
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / TURN).unlink(missing_ok=True)
        job = ev.remeasure_job(record, scale).replace(turn={"build_cpus": list(build_cpus), "wait": True})
        timeouts = {**ev._timeouts(), "wait": float("inf")}  # noqa: SLF001 - the evaluator's own
        self.res: ChildResult | None = None

        def run() -> None:
            self.res = ev._run(target, job, self.workdir, timeouts)  # noqa: SLF001

        self.thread = threading.Thread(target=run, name=f"gptuner-round-{purpose}", daemon=True)
        self.thread.start()

    def result(self, cpus: tuple[int, ...]) -> ChildResult:
        write_json_atomic(self.workdir / TURN, {"cpus": list(cpus)}, durable=False)
        self.thread.join()
        assert self.res is not None
        return self.res

    def cancel(self) -> None:
        write_json_atomic(self.workdir / TURN, {"cancel": True}, durable=False)
        self.thread.join(60)


class RoundPrefetch:
    """The prefetched re-measurements of one evaluator, by work folder (``purpose``)."""

    def __init__(self, ev: IsolatedEvaluator, build_cpus: tuple[int, ...], measure_cpus: tuple[int, ...],
                 target: str) -> None:
        self.ev, self.build_cpus, self.measure_cpus, self.target = ev, build_cpus, measure_cpus, target
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def start(self, calls: list[tuple[CandidateRecord, str, float]]) -> None:
        with self._lock:
            for record, purpose, scale in calls:
                if purpose not in self._pending:
                    self._pending[purpose] = _Pending(self.ev, record, purpose, scale, self.build_cpus,
                                                      self.target)

    def take(self, purpose: str) -> ChildResult | None:
        with self._lock:
            pending = self._pending.pop(purpose, None)
        return pending.result(self.measure_cpus) if pending is not None else None

    def cancel_all(self) -> None:
        with self._lock:
            left, self._pending = list(self._pending.values()), {}
        for pending in left:
            pending.cancel()


def attach(measure_fresh: Any, evaluator: Any, calls_of: Any) -> Any:
    """Give ``measure_fresh`` a ``prefetch(order)`` hint when ``evaluator`` prefetches rounds:
    ``calls_of(order)`` -> ``[(record, purpose, scale), ...]`` for the round's ``(number,
    round_index)`` pairs."""
    start = getattr(evaluator, "prefetch_rounds", None)
    if start is not None and evaluator.prefetching():
        measure_fresh.prefetch = lambda order: start(calls_of(order))
    return measure_fresh
