"""The screening interval widened by process-to-process variation (issue 25, item 2)."""

from __future__ import annotations

import math

from gptuner_core.measurement.process_spread import process_sd
from gptuner_core.measurement.process_spread import widened_interval


def test_process_sd_needs_three_processes_and_is_scale_free():
    assert process_sd([1.0, 2.0]) is None
    sd = process_sd([1.0, 2.0, 4.0])
    assert math.isclose(sd, math.log(2.0)) and math.isclose(process_sd([10.0, 20.0, 40.0]), sd)


def test_widened_interval_contains_the_within_one_and_grows_with_the_spread():
    within = (1.18, 1.25)
    lo, hi = widened_interval(1.21, within, 0.0)
    assert math.isclose(lo * hi, 1.21**2, rel_tol=0.05)  # symmetric on the log scale
    wide = widened_interval(1.21, within, 0.3)
    assert wide[0] < within[0] and wide[1] > within[1] and wide[0] < 1.0  # a busy host: 1.0 inside
    assert widened_interval(1.21, None, 0.1)[0] < 1.21 < widened_interval(1.21, None, 0.1)[1]
