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

    from gptuner_core.engine.loop.simulate import default_budget

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


@pytest.fixture(scope="module")
def big_recording(tmp_path_factory):
    """A 4,096-route Kernel Tuner space (three parameters of 16 values), every other measured."""
    import gzip
    import json

    from gptuner_core.interop.space_recording import to_recording
    from gptuner_core.interop.tuning_spaces import read_space

    values = list(range(1, 17))
    cache = {}
    for a, b, c in itertools.product(values, values, values):
        if (a + b + c) % 2:
            continue  # absent: infeasible
        t = 1.0 + ((a * 7 + b * 3 + c) % 97) / 10.0
        cache[f"{a},{b},{c}"] = {"a": a, "b": b, "c": c, "time": t, "times": [t, t * 1.01, t * 0.99],
                                 "compile_time": 100.0 + a}
    cache["1,1,2"]["time"] = cache["1,1,2"]["times"][0] = 0.5  # the default is listed and measured
    doc = {"device_name": "Test GPU", "kernel_name": "big", "problem_size": [1], "objective": "time",
           "tune_params_keys": ["a", "b", "c"], "tune_params": {"a": values, "b": values, "c": values},
           "cache": cache}
    path = tmp_path_factory.mktemp("big") / "big.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return to_recording(read_space(path)).recording


def test_the_random_band_reaches_a_study_of_more_than_2000_builds(big_recording):
    """Issue 40 item 6: the History view's random band stopped at 2,000 builds for a longer study;
    it now spans every build, thinned to at most MAX_BAND_POINTS points past that."""
    from gptuner_core.views.curves import MAX_BAND_POINTS
    from gptuner_core.views.curves import random_baseline

    rb = random_baseline(big_recording, 3000, draws=50)
    assert rb.builds[0] == 1 and rb.builds[-1] == 3000 and len(rb.builds) <= MAX_BAND_POINTS
    assert list(rb.builds) == sorted(set(rb.builds))
    assert len(rb.expected) == len(rb.low) == len(rb.high) == len(rb.builds)
    assert all(x <= y + 1e-12 for x, y in zip(rb.expected, rb.expected[1:], strict=False))
    exact = random_baseline(big_recording, 1500, draws=50)  # short budgets stay per build, exact
    assert exact.builds == tuple(range(1, 1501))
    for k in (1, 700, 1500):
        assert rb.expected_at(k) == pytest.approx(exact.expected[k - 1], rel=1e-9)


def test_a_study_of_2500_builds_gets_the_band_to_its_last_build(tmp_path, big_recording):
    """The History view's curves (``study_curves``): the band follows a 2,500-build study to its end."""
    import dataclasses
    import json

    from gptuner_core.views.curves import study_curves

    path = tmp_path / "big.json"
    path.write_text(json.dumps(big_recording.to_json()))
    recs = (big_recording.records * 2)[:2500]  # 2,048 routes, some built twice
    done = [dataclasses.replace(r, number=n) for n, r in enumerate(recs)]
    curve, rand, fraction = study_curves(done, {"backend": "replay", "model": str(path)})
    assert fraction and curve.builds[-1] == 2500
    assert rand is not None and rand.builds[-1] == 2500


def test_replay_runs_blas_on_one_thread():
    """Issue 40 item 5: a replay's small matrices ran slower on every BLAS thread (2 seeds of a
    22,272-route space: 8.7 s against 2.1 s on 2 cores); inside the replay BLAS has one."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from gptuner_core.engine.loop.simulate import single_threaded_blas

    with single_threaded_blas():
        blas = [p for p in threadpoolctl.threadpool_info() if p.get("user_api") == "blas"]
        assert all(p["num_threads"] == 1 for p in blas)
