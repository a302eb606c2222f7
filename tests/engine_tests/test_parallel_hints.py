"""The coordinator's hints to start re-validation processes ahead (``engine.scale.parallel``'s
``built(seen, settled)``), with a pool whose candidates the test finishes in the order it wants:
the real processes are in test_fork_server's round tests."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from gptuner_core.engine.loop.loop_parts import Budget
from gptuner_core.engine.loop.loop_parts import QuietSink
from gptuner_core.engine.scale.parallel import run_parallel
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.routes import Route
from gptuner_core.strategies import Proposal

from .conftest import wait_for


def _done(number: int, ms: float) -> CandidateRecord:
    lat = LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms,
                       cv=0.0, ci_low_ms=ms, ci_high_ms=ms, n_samples=1)
    return CandidateRecord(number=number, requested_route=f"-k={number}", state=CandidateState.COMPLETE,
                           latency=lat, speedup=3.0 / ms)


class _Pool:
    """Candidates in flight as futures the test completes; ``phase`` reports as their process would."""

    width = 4
    builds_before_default = True

    def __init__(self) -> None:
        self.futures: dict[int, Future[CandidateRecord]] = {}
        self.phase: dict[int, object] = {}

    def submit(self, proposal, number, history, artifacts, on_phase):
        self.futures[number], self.phase[number] = Future(), on_phase
        return self.futures[number]

    def default_committed(self, record) -> None:
        pass

    def measuring(self):
        import contextlib

        return contextlib.nullcontext()

    def close(self) -> None:
        pass


class _Three:
    """Proposes three routes, then nothing more."""

    def __init__(self) -> None:
        self.left = [Proposal(route=Route.parse(f"-k={n}")) for n in range(3)]

    def ask(self, history, pending=()):
        return self.left.pop(0) if self.left else None

    def tell(self, rec) -> None:
        pass


def _until(check, what: str) -> None:
    assert wait_for(check, 30, poll_s=0.01), what


def test_a_finalist_measured_before_an_earlier_candidate_is_hinted_before_that_one_commits():
    """Issue 38 on the H100: candidates are committed in proposal order, but measured as they are
    built; the finalists' round processes waited for every earlier candidate's commit (ResNet-50:
    #5 measured at 50.7 s, committed at 66 s after #4, its round 0 ready at 72.9 s). A result
    counts for the hints as soon as it is in: here #2 finishes while #1 still measures, and the
    finalists' hint (``settled``: nothing more to propose, all built) names #2 before #1 is in."""
    pool, hints = _Pool(), []
    args = dict(strategy=_Three(), evaluator=None, pool=pool, history=[], key=str,
                budget=Budget(), sink=QuietSink(), space_size=3, search="full",
                built=lambda seen, settled, waiting: (hints.append(([r.number for r in seen], settled)),
                                                      waits.append(waiting)))
    waits: list = []
    out: list = []
    coordinator = threading.Thread(target=lambda: out.append(run_parallel(**args)), daemon=True)
    coordinator.start()
    _until(lambda: len(pool.futures) == 3, "three candidates in flight")
    for n in (1, 2):
        pool.phase[n]("wait")  # built: each waits for the device
    pool.futures[0].set_result(_done(0, 3.0))
    _until(lambda: ([0], True) in hints, "the default's hint")
    assert waits[hints.index(([0], True))] == [(1, "-k=1"), (2, "-k=2")]  # without a result yet
    pool.futures[2].set_result(_done(2, 1.0))  # measured before #1
    _until(lambda: ([0, 2], True) in hints, f"a hint naming #2 before #1 is in: {hints}")
    pool.futures[1].set_result(_done(1, 2.0))
    coordinator.join(30)
    assert out and out[0].status == "finished"  # (re-validation's own hint takes over from here)


def test_before_everything_is_built_the_hint_says_so():
    """While a candidate still builds, hints are not ``settled`` (only the default's rounds
    start: ``finish.start_rounds_ahead``), and nothing is hinted before the default's result."""
    pool, hints = _Pool(), []
    args = dict(strategy=_Three(), evaluator=None, pool=pool, history=[], key=str,
                budget=Budget(), sink=QuietSink(), space_size=3, search="full",
                built=lambda seen, settled, waiting: hints.append(([r.number for r in seen], settled)))
    coordinator = threading.Thread(target=lambda: run_parallel(**args), daemon=True)
    coordinator.start()
    _until(lambda: len(pool.futures) == 3, "three candidates in flight")
    pool.futures[2].set_result(_done(2, 1.0))
    time.sleep(0.5)  # a few turns of the coordinator's loop (0.2 s each)
    assert hints == []  # no default yet: nothing to hint
    pool.futures[0].set_result(_done(0, 3.0))
    _until(lambda: bool(hints), "a hint once the default is in")
    assert hints[0] == ([0, 2], False)  # #1 still builds
    pool.phase[1]("wait")
    _until(lambda: hints[-1][1], f"settled once #1 is built: {hints}")
    pool.futures[1].set_result(_done(1, 2.0))
    coordinator.join(30)


def test_the_hints_start_from_the_default_routes_build_not_its_result():
    """Issue 38 on the H100: the six candidates of a study build side by side and the default
    measures first, so its result came when every build had ended (ResNet-50: all built at
    15.8 s, the default's result at 18.4 s, round 0's processes loaded from 18.5 to 25.6 s while
    the device was free from 23.6 s). Once the default is built (it waits for its turn) the
    hints start, with no result seen and the default among the candidates ``waiting``; nothing
    is hinted while it still builds."""
    pool, hints = _Pool(), []
    args = dict(strategy=_Three(), evaluator=None, pool=pool, history=[], key=str,
                budget=Budget(), sink=QuietSink(), space_size=3, search="full",
                built=lambda seen, settled, waiting: hints.append(([r.number for r in seen], settled, waiting)))
    coordinator = threading.Thread(target=lambda: run_parallel(**args), daemon=True)
    coordinator.start()
    _until(lambda: len(pool.futures) == 3, "three candidates in flight")
    pool.phase[1]("wait")
    time.sleep(0.5)  # a few turns of the coordinator's loop (0.2 s each)
    assert hints == []  # the default still builds: nothing to hint
    pool.phase[0]("wait")
    _until(lambda: bool(hints), "a hint once the default is built")
    assert hints[0] == ([], False, [(0, "-k=0"), (1, "-k=1"), (2, "-k=2")])  # #2 still builds
    pool.phase[2]("wait")
    _until(lambda: hints[-1][1], f"settled once #2 is built: {hints}")
    assert hints[-1][0] == []  # before any result
    pool.futures[0].set_result(_done(0, 3.0))
    _until(lambda: hints[-1][0] == [0], f"the default's result: {hints}")
    pool.futures[1].set_result(_done(1, 2.0))
    pool.futures[2].set_result(_done(2, 1.0))
    coordinator.join(30)
