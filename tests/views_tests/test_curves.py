"""Best-so-far curves and random search's expectation on a recorded space (issue 28 item 5)."""

from __future__ import annotations

import itertools
import statistics

import pytest

from gptuner_core.cli import main
from gptuner_core.testing import spaces


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    from gptuner_core.interop.space_recording import to_recording
    from gptuner_core.interop.tuning_spaces import read_space

    t4, _ = spaces.write_spaces(tmp_path_factory.mktemp("spaces"))
    return to_recording(read_space(t4)).recording


def test_random_expectation_by_builds_is_exact(recording):
    """The closed form equals the mean over every set of k-1 routes drawn after the default."""
    from gptuner_core.views.curves import random_baseline

    opt, _ = recording.optimum()
    base_key = recording.expression.baseline().key(recording.db)
    others = []
    for route in recording.expression.iter_routes("full"):
        key = route.key(recording.db)
        if key != base_key:
            rec = recording.by_key.get(key)
            others.append(((recording.speedup(rec) or 0.0) if rec is not None else 0.0) / opt)
    v0 = 1.0 / opt
    rb = random_baseline(recording, 6, draws=2000)
    for k in range(1, 7):
        exact = statistics.fmean(max([v0, *pick]) for pick in itertools.combinations(others, k - 1))
        assert rb.expected[k - 1] == pytest.approx(exact, rel=1e-9)
        assert rb.low[k - 1] <= rb.expected[k - 1] + 1e-9 and rb.expected[k - 1] <= rb.high[k - 1] + 0.3
    assert rb.failed_share == pytest.approx(8 / 23)  # 2 failed + 6 infeasible of the 23 others
    assert rb.expected_s[0] == 0.0 and rb.seconds[0] == 0.0


def test_replay_prints_the_curve_per_strategy(capsys, tmp_path, recording):
    import json

    path = tmp_path / "rec.json"
    path.write_text(json.dumps(recording.to_json()))
    code = main(["replay", str(path), "--search", "random,full", "--budget", "10", "--seeds", "3"])
    out, err = capsys.readouterr()
    assert code == 0, err
    for name in ("random", "full"):
        assert f"{name}, budget 10 builds: mean" in out
        assert f"{name}, best so far (% of the optimum; mean of 3 seed(s))" in out
    lines = out.splitlines()
    builds = [ln for ln in lines if ln.strip().startswith("builds")]
    assert builds and builds[0].split()[1:] == ["1", "2", "5", "10"]
    expected = [ln for ln in lines if ln.strip().startswith("E[random]")]
    assert len(expected) == 4  # by builds and by build seconds, for each strategy
    assert float(expected[0].split()[1]) == pytest.approx(100 / recording.optimum()[0], abs=0.05)
    assert "all 3 seeds proposed the same routes ('full'" in out  # full ignores its seed
    assert "seeds proposed the same routes ('random'" not in out
    assert "went to failed or infeasible routes (random search: 35%)" in out


def test_replay_warm_start_reports_the_agreement_of_the_spaces(capsys, tmp_path, recording):
    import json

    path = tmp_path / "rec.json"
    path.write_text(json.dumps(recording.to_json()))
    code = main(["replay", str(path), "--search", "random", "--budget", "4", "--warm-start", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "warm start from" in out and "3 route(s)" in out
    assert "16 routes measured in both, rank correlation (Spearman) 1.000" in out
    assert "seed 0: 4.889x = 100.0%" in out  # the warm start's best route is proposed second


def test_replay_without_budget_prints_the_budget_it_chose(capsys, tmp_path, recording):
    """Issue 40 item 6: the default was 20 % of the space (4 minutes per seed on a 22k-route
    space); it is now at most 200 builds, and the choice is printed."""
    import json

    from gptuner_core.engine.simulate import default_budget

    assert default_budget(24) == 5  # 20 % of a small space
    assert default_budget(22_272) == 200 and default_budget(10**20) == 200
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(recording.to_json()))
    code = main(["replay", str(path), "--search", "random", "--seeds", "2", "--no-curve"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines()[0] == ("budget: 5 builds (the default: 20% of the space's 24 routes, "
                                   "at most 200; --budget N or P% to change)")
    assert "random, budget 5 builds: mean" in out
