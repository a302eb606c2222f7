"""A re-validation round's seconds (``engine.evaluate.rounds``): each process's split summed per
round, its samples apart, and what a round started ahead adds to the re-validation."""

from __future__ import annotations

import json

from gptuner_core.engine.evaluate.rounds import round_times
from gptuner_core.engine.evaluate.rounds import split_of


def test_round_times_sum_each_rounds_processes(tmp_path):
    for name, start in (("r0_00000", 0.2), ("r0_00003", 0.4), ("r1_00000", 0.1), ("baseline", 9.0)):
        (tmp_path / "revalidation" / name).mkdir(parents=True)
        split = split_of({"start": start, "build": 1.0, "measure": 0.5})
        (tmp_path / "revalidation" / name / "times.json").write_text(json.dumps(split))
    assert round_times(tmp_path) == [
        {"round": 0, "processes": 2, "startup": 0.6, "compile": 2.0, "measure": 1.0, "total": 3.6},
        {"round": 1, "processes": 1, "startup": 0.1, "compile": 1.0, "measure": 0.5, "total": 1.6},
    ]


def test_round_times_add_the_samples_seconds_where_processes_give_them(tmp_path):
    """A round's ``sampling`` is the seconds its processes spent taking samples, summed: the rest
    of ``measure`` is their first calls (the runner's prepare) and the hand-over."""
    for name, sampling in (("r0_00000", 0.3), ("r0_00003", 0.25), ("r1_00000", None)):
        (tmp_path / "revalidation" / name).mkdir(parents=True)
        split = split_of({"start": 0.1, "build": 1.0, "measure": 0.5}, sampling=sampling)
        (tmp_path / "revalidation" / name / "times.json").write_text(json.dumps(split))
    rows = round_times(tmp_path)
    assert rows[0]["sampling"] == 0.55 and rows[0]["measure"] == 1.0
    assert "sampling" not in rows[1]  # an older process's split has none: not a zero


def test_a_round_started_ahead_adds_only_the_time_after_the_previous_round(tmp_path):
    """Round processes start rounds ahead (issue 38): a round's ``wall`` is what it added after
    the previous round's last result, its ``span`` the time since its first request."""
    for name, begin, end in (("r0_00000", 0.0, 10.0), ("r0_00001", 0.0, 11.0),
                             ("r1_00000", 0.5, 12.5), ("r1_00001", 0.5, 13.0), ("r2_00000", 14.0, 15.0)):
        (tmp_path / "revalidation" / name).mkdir(parents=True)
        split = {"startup": 0.1, "compile": 8.0, "measure": 1.0, "begin": begin, "end": end}
        (tmp_path / "revalidation" / name / "times.json").write_text(json.dumps(split))
    rows = round_times(tmp_path)
    assert [(r["span"], r["wall"]) for r in rows] == [(11.0, 11.0), (12.5, 2.0), (1.0, 1.0)]
