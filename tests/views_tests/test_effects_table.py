"""Explain's knob-effects table (issue 39 item 7's screenshots): each estimate with its interval
in one column, so the table fits the page as a wrapped static table (15 columns did not)."""

from __future__ import annotations

from gptuner_core.explain.effects import KnobEffect
from gptuner_core.views import explain as ev


def test_effects_frame_puts_each_interval_beside_its_estimate() -> None:
    effect = KnobEffect(knob="-torch:mode", value="reduce-overhead", default="default", n=1,
                        n_failed=0, failure_rate=0.0, failure_ci=(0.0, 0.7935), default_n=4,
                        default_failure_rate=0.5, n_eligible=1, default_n_eligible=2,
                        speedup=2.148, speedup_ci=(2.119, 2.177), method="paired")
    frame = ev.effects_frame([effect])
    assert len(frame.columns) <= 11
    row = frame.iloc[0]
    assert row["speed-up (95% CI)"] == "2.148x [2.119, 2.177]"
    assert row["failure rate (95% CI)"] == "0% [0%, 79%]"
    assert row["failure rate at default"] == "50%"
    none = KnobEffect(knob="k", value="v", default="d", n=1, n_failed=1, failure_rate=1.0,
                      failure_ci=(0.2, 1.0), default_n=1, default_failure_rate=0.0, n_eligible=0,
                      default_n_eligible=1, speedup=None, speedup_ci=None)
    assert ev.effects_frame([none]).iloc[0]["speed-up (95% CI)"] == "—"
