"""Statistics are defined for n < 2: no interval, a flag saying why, never an exception.

The defect: a candidate with a single latency sample made ``speedup`` raise scipy's
"each sample in `data` must contain two or more observations", and ``paired_speedup`` with one
round raised instead of saying the interval is not known yet.
"""

from __future__ import annotations

import pytest

from gptuner_core.measurement import paired_speedup
from gptuner_core.measurement import speedup


class TestSingleSample:
    @pytest.mark.parametrize(
        ("default", "candidate"),
        [([1.0], [0.8, 0.9, 0.85]), ([1.0, 1.1, 0.9], [0.8]), ([1.0], [0.5])],
    )
    def test_speedup_of_a_single_sample_has_a_point_and_no_interval(
        self, default: list[float], candidate: list[float]
    ) -> None:
        """One sample on either side: the ratio of medians, no CI, flagged (no scipy error)."""
        est = speedup(default, candidate)
        assert est.point == pytest.approx(sorted(default)[len(default) // 2] / sorted(candidate)[len(candidate) // 2])
        assert est.low is None and est.high is None and est.ci is None
        assert "needs >= 2" in est.note
        assert not est.significant()
        assert est.to_json()["low"] is None
        assert "no CI" in str(est)

    def test_paired_speedup_of_one_round_has_no_interval(self) -> None:
        """One paired round: the ratio, no CI, flagged."""
        est = paired_speedup([1.0], [0.5])
        assert est.point == pytest.approx(2.0)
        assert est.ci is None and "needs >= 2" in est.note

    def test_two_samples_have_an_interval(self) -> None:
        """From two samples on each side the interval exists again and holds the point."""
        est = speedup([1.0, 1.2], [0.8, 0.9])
        assert est.ci is not None and est.low <= est.point <= est.high and est.note == ""


def test_one_sample_summaries_are_defined() -> None:
    """summarize / bootstrap_ci / the sequential interval of a single value: defined, no raise."""
    from gptuner_core.measurement import bootstrap_ci
    from gptuner_core.measurement import summarize
    from gptuner_core.measurement.paired import log_ratio_interval

    stats = summarize([0.42])
    assert (stats.median_ms, stats.cv, stats.ci_low_ms, stats.ci_high_ms) == (0.42, 0.0, 0.42, 0.42)
    assert bootstrap_ci([0.42]) == (0.42, 0.42)
    for method in ("t", "rank"):
        iv = log_ratio_interval([0.1], 0.05, method)
        assert iv.low is None and "needs >= 2 rounds" in iv.note
