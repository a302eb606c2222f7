"""The measuring cores (``engine.scale.overlap.core_split``): a whole physical core, so that no
build runs on a hyperthread sibling of the measurement (issue 38: on the H100 the samples of the
launch-bound routes took 1-3 s instead of 0.3 s while round processes loaded on the build cores)."""

from __future__ import annotations

from gptuner_core.engine.scale.overlap import core_split
from gptuner_core.engine.scale.overlap import parse_cpu_list
from gptuner_core.engine.scale.overlap import thread_siblings


def _pairs(offset: int):
    """Two hyperthreads per core: ``cpu`` and ``cpu + offset`` (cloud VMs: 8), or ``2k, 2k+1``."""
    def siblings(cpu: int) -> frozenset[int]:
        if offset == 1:
            return frozenset({cpu - cpu % 2, cpu - cpu % 2 + 1})
        return frozenset({cpu % offset, cpu % offset + offset})
    return siblings


def test_no_build_shares_a_physical_core_with_the_measurement():
    split = core_split(set(range(16)), siblings=_pairs(8))
    assert split.measure == (7, 15)
    assert split.build == (*range(7), *range(8, 15))
    split = core_split(set(range(16)), siblings=_pairs(1))
    assert split.measure == (14, 15) and split.build == tuple(range(14))


def test_without_hyperthreads_the_last_two_cores_measure():
    split = core_split(set(range(16)), siblings=lambda cpu: frozenset({cpu}))
    assert split.measure == (14, 15) and split.build == tuple(range(14))
    assert core_split({0, 1, 2}, siblings=lambda cpu: frozenset({cpu})).measure == ()  # too few


def test_siblings_outside_the_usable_cores_are_ignored():
    """Affinity to cores 0-11 of a 16-cpu machine whose siblings are ``k, k+8``: cores 3 and 11
    form the last whole core inside the set."""
    split = core_split(set(range(12)), siblings=_pairs(8))
    assert split.measure == (3, 11)
    assert 3 not in split.build and 11 not in split.build and len(split.build) == 10


def test_a_machine_of_two_physical_cores_keeps_one_for_builds():
    """Four cpus, two cores of two threads: the measurement takes one core, the builds the other."""
    split = core_split({0, 1, 2, 3}, siblings=_pairs(2))
    assert split.measure == (1, 3) and split.build == (0, 2)


def test_the_kernel_cpu_lists_are_read():
    assert parse_cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpu_list("5") == {5}
    assert 0 in thread_siblings(0)  # this machine's own topology (or just 0 where unknown)
    assert thread_siblings(100_000) == frozenset({100_000})  # no such cpu: itself alone
