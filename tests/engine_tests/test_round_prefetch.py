"""The line of round processes started ahead (issue 38: a round never waits for compilation):
as many load at once as there are build cores, in the rounds' order, the rest as places free up;
a process whose turn comes before it started starts at once; cancel ends every one; a hint that
no longer names a started process cancels it (a finalist dropped), and one wanted again starts only
after its cancelled process has left its folder."""

from __future__ import annotations

from gptuner_core.engine.evaluate import round_prefetch
from gptuner_core.engine.evaluate.round_prefetch import RoundPrefetch
from gptuner_core.engine.evaluate.round_prefetch import room


class _Process:
    """Stands in for one forked round process: the line's policy is what is tested here (the
    real processes are in test_fork_server's round test)."""

    started: list[str] = []
    cancelled: list[str] = []
    loading: set[str] = set()  # cancelled, still loading (alive)

    def __init__(self, ev, record, purpose, scale, build_cpus, target) -> None:
        self.purpose = purpose
        _Process.started.append(purpose)

    def result(self, cpus):
        return f"measured {self.purpose} on {cpus}"

    def cancel(self, *, wait: bool = True) -> None:
        _Process.cancelled.append(self.purpose)
        if not wait:
            _Process.loading.add(self.purpose)

    def alive(self) -> bool:
        return self.purpose in _Process.loading

    def join(self, timeout=None) -> None:
        _Process.loading.discard(self.purpose)


def _calls(rounds: int, per_round: int = 3, first: int = 0) -> list:
    return [(None, f"r{r}_{n}", 0.25) for r in range(first, rounds) for n in range(per_round)]


def test_as_many_load_as_there_is_room_in_the_rounds_order(monkeypatch):
    monkeypatch.setattr(round_prefetch, "_Pending", _Process)
    _Process.started, _Process.cancelled = [], []
    line = RoundPrefetch(None, build_cpus=tuple(range(7)), measure_cpus=(14, 15), target="t")
    assert line.capacity == room(tuple(range(7))) == 7
    line.start(_calls(4))  # round 0 and every later round, as revalidate_sequential hints
    assert _Process.started == [f"r{r}_{n}" for r in range(3) for n in range(3)][:7]
    assert line.take("r0_0") == "measured r0_0 on (14, 15)"
    assert _Process.started[-1] == "r2_1"  # a place freed: the next in line loads
    assert line.take("r0_1") and line.take("r0_2")
    line.start(_calls(4, first=1))  # the next round's hint names nothing new
    assert len(_Process.started) == 10 and not _Process.cancelled
    assert line.take("r3_2") == "measured r3_2 on (14, 15)"  # its turn came first: started now
    line.cancel_all()
    assert sorted(_Process.cancelled) == sorted(set(_Process.started) - {"r0_0", "r0_1", "r0_2", "r3_2"})
    assert line.take("r3_0") is None  # cancelled: the caller measures it itself


def test_few_cores_still_load_two_ahead():
    assert room(()) == 2 and room((0,)) == 2 and room(tuple(range(14))) == 14


def test_a_hint_that_drops_a_started_process_cancels_it_and_frees_its_place(monkeypatch):
    """Screening hints the rounds of its leaders before re-validation starts; re-validation's own
    hint then names other finalists: the processes of the dropped one are told to exit (without
    waiting for their load) and the new finalist's load at once."""
    monkeypatch.setattr(round_prefetch, "_Pending", _Process)
    _Process.started, _Process.cancelled, _Process.loading = [], [], set()
    line = RoundPrefetch(None, build_cpus=tuple(range(4)), measure_cpus=(14, 15), target="t")

    def rounds(*numbers):
        return [(None, f"r{r}_{n}", 0.25) for r in range(2) for n in numbers]

    line.start(rounds(0, 1))  # the default and the leader so far
    assert _Process.started == ["r0_0", "r0_1", "r1_0", "r1_1"]
    line.start(rounds(0, 2))  # screening's last candidate leads now
    assert sorted(_Process.cancelled) == ["r0_1", "r1_1"]
    assert _Process.started[4:] == ["r0_2", "r1_2"]
    line.start(rounds(0, 1))  # and the first leads again: its cancelled processes are still loading
    assert _Process.started[6:] == [] and sorted(_Process.cancelled) == ["r0_1", "r0_2", "r1_1", "r1_2"]
    assert line.take("r0_1") == "measured r0_1 on (14, 15)"  # waits for the old one, then starts
    assert _Process.started[6:] == ["r0_1"]  # r1_1's old process is still loading
    _Process.loading.discard("r1_1")  # it has gone
    assert line.take("r0_0") == "measured r0_0 on (14, 15)"
    assert _Process.started[6:] == ["r0_1", "r1_1"]  # the place went to it
    line.cancel_all()
    assert not _Process.loading
