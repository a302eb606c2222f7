"""Drift sentinel helpers: relative change vs the first baseline, nearest-baseline normalization."""

from __future__ import annotations

import pytest

from gptuner_core.errors import ConfigError
from gptuner_core.measurement import Baseline
from gptuner_core.measurement import baselines
from gptuner_core.measurement import drift
from gptuner_core.measurement import drift_range
from gptuner_core.measurement import nearest
from gptuner_core.measurement import normalize
from gptuner_core.measurement import normalized_speedup
from gptuner_core.storage._base import Event


EVENTS = [
    Event(id=1, time=100.0, kind="baseline", payload={"median_ms": 2.0, "after_candidate": 0}),
    Event(id=2, time=200.0, kind="baseline", payload={"median_ms": 2.2, "after_candidate": 10}),
    Event(id=3, time=300.0, kind="baseline", payload={"median_ms": 1.9, "after_candidate": 20}),
]


def test_drift_is_relative_to_the_first_baseline() -> None:
    """+10 % then -5 %."""
    assert drift(EVENTS) == pytest.approx([0.0, 0.1, -0.05])
    assert drift_range(EVENTS) == pytest.approx((-0.05, 0.1))
    assert drift([]) == [] and drift_range([]) is None


def test_accepts_events_dicts_pairs_in_any_order() -> None:
    """Events, dicts (also with a nested latency) and (time, median) pairs are ordered by time."""
    mixed = [
        (300.0, 1.9),
        {"time": 100.0, "median_ms": 2.0},
        {"time": 200.0, "latency": {"median_ms": 2.2}},
    ]
    assert [b.time for b in baselines(mixed)] == [100.0, 200.0, 300.0]
    assert drift(mixed) == pytest.approx(drift(EVENTS))
    assert baselines(EVENTS)[1] == Baseline(time=200.0, median_ms=2.2, after_candidate=10)


def test_normalize_to_the_nearest_baseline() -> None:
    """A candidate measured near the +10 % baseline is credited 10 %."""
    assert nearest(190.0, EVENTS).median_ms == 2.2
    assert nearest(150.0, EVENTS).time == 100.0  # tie: the earlier baseline
    assert normalize(210.0, 1.1, EVENTS) == pytest.approx(1.0)
    assert normalize(90.0, 1.1, EVENTS) == pytest.approx(1.1)
    assert normalized_speedup(290.0, 0.95, EVENTS) == pytest.approx(2.0)


def test_bad_baselines_are_clear_errors() -> None:
    """Missing medians, no baselines and bad candidate medians are ConfigErrors."""
    with pytest.raises(ConfigError, match="median_ms > 0"):
        drift([{"time": 1.0}])
    with pytest.raises(ConfigError, match="none were recorded"):
        normalize(1.0, 1.0, [])
    with pytest.raises(ConfigError, match="candidate_median must be a number > 0"):
        normalize(1.0, 0.0, EVENTS)
    with pytest.raises(ConfigError, match="a baseline must be"):
        drift(["2.0"])
