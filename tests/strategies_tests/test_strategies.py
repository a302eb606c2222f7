"""Contract over every registered strategy, replayed on a real recorded sweep.

``tests/data/recorded_sweep/sweep.json``: 24 routes of a real ONNX Runtime study (a CNN timed in a
fresh process per route by ``benchmarks/record_sweep.py``; see the file's ``how``).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from gptuner_core.engine.loop.simulate import simulate
from gptuner_core.errors import ConfigError
from gptuner_core.errors import StrategyError
from gptuner_core.expressions import mixed_phase2
from gptuner_core.recording import load_recording
from gptuner_core.routes import Route
from gptuner_core.strategies import describe_strategies
from gptuner_core.strategies import get_strategy
from gptuner_core.strategies import strategy_names
from gptuner_core.strategies.warm_start import warm_start_routes


SWEEP = Path(__file__).resolve().parents[1] / "data" / "recorded_sweep" / "sweep.json"
warnings.filterwarnings("ignore", category=FutureWarning)


@pytest.fixture(scope="module")
def recording():
    return load_recording(SWEEP)


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory, recording):
    d = tmp_path_factory.mktemp("study")
    recording.write_study(d)
    return d


@pytest.mark.parametrize("name", strategy_names())
class TestContract:
    """Every strategy: finite, default first, no duplicates, budget respected."""

    def test_exhausts_finitely_without_duplicates(self, name, recording):
        """Run until the strategy stops: nothing proposed twice, baseline first."""
        size = recording.expression.count("full")
        # GP refits a Gaussian process per trial (seconds each on 2 cores): exhausting the space
        # is checked for the other model-based strategies, GP stops after its own 8 trials
        opts = {"max_trials": 8} if name == "gp" else {}
        res = simulate(name, recording, size + 10, seed=3, **opts)
        assert res.duplicates == ()
        assert res.trace[0].route == str(recording.expression.baseline())
        assert res.builds_used <= (9 if name == "gp" else size + 1)
        assert res.exhausted or res.builds_used == size + 1
        keys = [Route.parse(s.route).key(recording.db) for s in res.trace if not s.remeasure]
        assert len(keys) == len(set(keys))

    def test_budget_respected(self, name, recording):
        """At most ``budget`` builds."""
        res = simulate(name, recording, 5, seed=1)
        assert res.builds_used <= 5
        assert 0 < res.found_optimum_fraction <= 1.0

    def test_resume_never_reproposes(self, name, recording):
        """History of an earlier run (any order) is never proposed again."""
        earlier = list(recording.records[:7])
        strategy = get_strategy(name, recording.expression, seed=0, db=recording.db)
        seen = {Route.parse(r.requested_route).key(recording.db) for r in earlier}
        history = list(earlier)
        for _ in range(5):
            p = strategy.ask(history)
            if p is None:
                break
            key = p.route.key(recording.db)
            if p.remeasure_of is None:
                assert key not in seen
                seen.add(key)
            rec = recording.by_key[key].replace(number=len(history), requested_route=str(p.route))
            history.append(rec)

    def test_warm_start_after_baseline(self, name, recording):
        """Warm-start routes come right after the baseline."""
        warm = [recording.expression.route_at("full", 17), recording.expression.route_at("full", 5)]
        res = simulate(name, recording, 3, seed=0, warm_start=warm)
        assert [s.route for s in res.trace[1:3]] == [str(w) for w in warm]

    def test_store_recording_replays_identically(self, name, recording, study_dir):
        """A study folder written through the store API replays like its JSON."""
        a = simulate(name, recording, 8, seed=2)
        b = simulate(name, study_dir, 8, seed=2)
        assert [s.route for s in a.trace] == [s.route for s in b.trace]
        assert a.best_speedup == pytest.approx(b.best_speedup)


class TestTrtexecOrders:
    """fast / full / mixed follow trtexec's orders exactly."""

    def test_fast_order(self, recording):
        res = simulate("fast", recording, 100)
        assert [s.route for s in res.trace] == [
            str(r) for r in recording.expression.iter_routes("fast")
        ]

    def test_full_order_after_baseline(self, recording):
        expr = recording.expression
        base = expr.baseline()
        res = simulate("full", recording, 100)
        expected = [base] + [r for r in expr.iter_routes("full") if r != base]
        assert [s.route for s in res.trace] == [str(r) for r in expected]

    def test_mixed_phase2_over_positive_knobs(self, recording):
        expr, db = recording.expression, recording.db
        res = simulate("mixed", recording, 100)
        fast = [str(r) for r in expr.iter_routes("fast")]
        assert [s.route for s in res.trace[: len(fast)]] == fast
        base_ms = recording.baseline.latency.median_ms
        positive = set()
        for i in range(1, expr.count("fast")):
            rec = recording.by_key[expr.route_at("fast", i).key(db)]
            if rec.latency and rec.latency.median_ms < base_ms:
                positive.add(expr.varied_at(i)[0])
        phase2 = [s.route for s in res.trace[len(fast):]]
        if len(positive) > 1:
            done = {Route.parse(r).key(db) for r in fast}
            expected = [str(r) for r in mixed_phase2(expr, positive).iter_routes("full")
                        if r.key(db) not in done]
            assert phase2 == expected
            assert all(s.info["phase"] == 2 for s in res.trace[len(fast):])
        else:
            assert phase2 == []

    def test_mixed_noise_needs_significance(self, recording):
        """With an impossible threshold no knob is positive: mixed_noise is fast."""
        res = simulate("mixed_noise", recording, 100, min_speedup=1e9)
        assert len(res.trace) == recording.expression.count("fast")


class TestRaceAndReplay:
    def test_race_remeasures_contenders(self, recording):
        res = simulate("race", recording, 100)
        rungs = [s.info.get("race_rung") for s in res.trace]
        assert 0 in rungs and max(r for r in rungs if r is not None) >= 1
        assert res.remeasurements >= 1
        assert all(s.remeasure for s in res.trace if (s.info.get("race_rung") or 0) > 0)

    def test_missing_routes_reported_as_build_failed(self, recording):
        sub = load_recording(SWEEP)
        object.__setattr__(sub, "records", sub.records[:10])
        res = simulate("full", sub, 24)
        assert len(res.missing) == 14
        assert all(s.state == "BUILD_FAILED" for s in res.trace[10:])

    def test_budget_percent(self, recording):
        assert simulate("random", recording, "25%").builds_used == 6
        with pytest.raises(ConfigError, match="percentage"):
            simulate("random", recording, "lots")


class TestOptions:
    """Options are data, validated with messages listing what is allowed."""

    def test_unknown_option(self, recording):
        with pytest.raises(StrategyError, match=r"unknown option\(s\) \['bogus'\] for strategy 'tpe' \(allowed: \["):
            get_strategy("tpe", recording.expression, bogus=1)

    def test_bad_choice_and_type(self, recording):
        with pytest.raises(StrategyError, match=r"option 'startup' must be one of \['random', 'fast'\] \(got 'x'\)"):
            get_strategy("tpe", recording.expression, startup="x")
        with pytest.raises(StrategyError, match=r"option 'eta' must be float \(got 'abc'\)"):
            get_strategy("race", recording.expression, eta="abc")
        with pytest.raises(StrategyError, match=r"'eta' must be > 1"):
            get_strategy("race", recording.expression, eta=1)

    def test_unknown_strategy(self, recording):
        with pytest.raises(StrategyError, match=r"unknown strategy 'nope' \(available: fast, full"):
            get_strategy("nope", recording.expression)

    def test_describe(self):
        desc = {d["name"]: d for d in describe_strategies()}
        assert set(desc) == set(strategy_names())
        assert sum(d["default"] for d in desc.values()) == 1
        assert desc["race"]["options"]["eta"] == {
            "description": "keep the best 1/eta per rung", "default": 3.0, "type": "float",
            "choices": None, "minimum": 1.0, "maximum": None,
        }


def test_warm_start_routes(recording, study_dir):
    """Best routes of an earlier study with the same database, restricted to this space."""
    routes = warm_start_routes([study_dir], recording.expression, top_n=2, db=recording.db)
    assert len(routes) == 2
    best = max((r for r in recording.records if r.eligible), key=lambda r: r.speedup)
    assert routes[0].key(recording.db) == Route.parse(best.requested_route).key(recording.db)


@pytest.mark.parametrize("name", ["fast_tpe", "tpe", "gp"])
def test_a_strategy_whose_library_is_missing_says_how_to_get_it(name, monkeypatch):
    """Seen on a machine without optuna: ``gptuner tune`` (default ``--search fast_tpe``) said only
    "strategy 'fast_tpe' is unavailable: No module named 'optuna'"; the line must say what to
    install and which searches work without it."""
    import sys

    recording = load_recording(SWEEP)
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if it were not installed
    with pytest.raises(StrategyError) as err:
        get_strategy(name, recording.expression, seed=0, db=recording.db)
    line = str(err.value)
    assert "\n" not in line
    assert f"--search {name}" in line and "optuna" in line
    assert "pip install 'gptuner[search]'" in line
    assert "--search full" in line and "--search random" in line
