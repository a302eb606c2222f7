"""Issue 39 item 8: the knob importance says from how many routes it was ranked, and when its
intervals leave the ranking undetermined."""

from __future__ import annotations


def test_importance_says_how_many_routes_and_when_it_is_undetermined() -> None:
    """Issue 39 item 8: CI [0, 1] for both knobs from 4 routes, without a word; "4" in the table
    against "eligible 6" in the header (2 duplicates dropped silently)."""
    from gptuner_core.explain.importance import KnobImportance
    from gptuner_core.views.explain import importance_caveat

    items = [KnobImportance(knob="-a", importance=0.6, ci=(0.0, 1.0), n=4),
             KnobImportance(knob="-b", importance=0.4, ci=(0.0, 1.0), n=4)]
    line = importance_caveat(items, eligible=6)
    assert "4 distinct eligible routes" in line and "2 eligible candidates" in line
    assert "not determined" in line
    sure = [KnobImportance(knob="-a", importance=0.9, ci=(0.8, 0.95), n=40)]
    assert importance_caveat(sure, eligible=40) == "Ranked from 40 distinct eligible routes."
