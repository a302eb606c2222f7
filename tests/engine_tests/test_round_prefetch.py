"""The line of round processes started ahead (issue 38: a round never waits for compilation):
as many load at once as there are build cores, in the rounds' order, the rest as places free up;
a process whose turn comes before it started starts at once; cancel ends every one."""

from __future__ import annotations

from gptuner_core.engine import round_prefetch
from gptuner_core.engine.round_prefetch import RoundPrefetch
from gptuner_core.engine.round_prefetch import room


class _Process:
    """Stands in for one forked round process: the line's policy is what is tested here (the
    real processes are in test_fork_server's round test)."""

    started: list[str] = []
    cancelled: list[str] = []

    def __init__(self, ev, record, purpose, scale, build_cpus, target) -> None:
        self.purpose = purpose
        _Process.started.append(purpose)

    def result(self, cpus):
        return f"measured {self.purpose} on {cpus}"

    def cancel(self) -> None:
        _Process.cancelled.append(self.purpose)


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
    line.start(_calls(4, first=1))  # the next round's hint names nothing new
    assert len(_Process.started) == 8
    assert line.take("r3_2") == "measured r3_2 on (14, 15)"  # its turn came first: started now
    line.cancel_all()
    assert sorted(_Process.cancelled) == sorted(set(_Process.started) - {"r0_0", "r3_2"})
    assert line.take("r3_0") is None  # cancelled: the caller measures it itself


def test_few_cores_still_load_two_ahead():
    assert room(()) == 2 and room((0,)) == 2 and room(tuple(range(14))) == 14
