"""``hybrid`` on small synthetic recordings made here (bo's 512-route bowl, and a two-basin space)."""

from __future__ import annotations

import pytest

from gptuner_core.engine.loop.simulate import simulate
from gptuner_core.errors import StrategyError
from gptuner_core.recording import Recording
from gptuner_core.routes import Route
from gptuner_core.strategies import get_strategy
from gptuner_core.strategies.warm_start import load_prior
from tests.strategies_tests.synthetic import synthetic_recording
from tests.strategies_tests.test_bo import failed_share
from tests.strategies_tests.test_bo import recording


@pytest.fixture(scope="module")
def rec() -> Recording:
    return recording()


def two_basins() -> Recording:
    """``d=off``: a wide bowl, its best 1.0 at a=1, b=1; ``d=on``: slow (3.0) except a narrow,
    deeper bowl (0.6) at a=6, b=6. Every route builds."""
    knobs = {"-t:a": [str(v) for v in range(8)], "-t:b": [str(v) for v in range(8)],
             "-t:c": ["1", "2", "3"], "-t:d": ["off", "on"]}

    def outcome(_: int, values: tuple[str, ...]) -> float:
        a, b, c, d = int(values[0]), int(values[1]), int(values[2]), values[3]
        if d == "off":
            return 1.0 + 0.05 * ((a - 1) ** 2 + (b - 1) ** 2) + 0.05 * c
        return min(3.0, 0.6 + 0.4 * ((a - 6) ** 2 + (b - 6) ** 2) + 0.05 * c)
    return synthetic_recording(knobs, outcome)


def knobs_apart(x: str, y: str) -> int:
    a, b = dict(Route.parse(x).assignments), dict(Route.parse(y).assignments)
    return sum(a.get(k) != b.get(k) for k in a.keys() | b.keys())


def test_local_turns_polish_a_route_that_built(rec):
    """After bo's random start, two turns in three are local: a one/two/three-off neighbour of
    the centre, which is a route that built (the best so far unless its basin is finished)."""
    res = simulate("hybrid", rec, 60, seed=2, budget_fraction=0.0, restart="best")
    assert not res.duplicates
    built: dict[str, float] = {}
    local = 0
    for step in res.trace:
        if step.info.get("phase") == "local":
            local += 1
            centre = step.info["centre"]
            assert centre in built
            assert 1 <= knobs_apart(step.route, centre) <= 3
            if not step.info["finished"]:  # no basin finished yet: the centre is the best
                assert built[centre] == min(built.values())
        if step.state == "COMPLETE":
            built[step.route] = step.observed_ms
    assert local >= 25


@pytest.mark.parametrize("restart", ["best", "random"])
def test_a_finished_basin_restarts_elsewhere(restart):
    """The wide bowl draws the search; once every one-off neighbour of its best is tried it is
    finished, and the next climb starts at least ``restart_distance`` knobs away: at the best
    route there (``best``) or, the first time, at a random route (``random``)."""
    res = simulate("hybrid", two_basins(), 120, seed=0, budget_fraction=0.0, restart=restart)
    steps = [s for s in res.trace if s.info.get("phase") in ("local", "restart")]
    first = next(i for i, s in enumerate(steps) if s.info["finished"] >= 1)
    assert first > 0
    finished = steps[first - 1].info["centre"]  # the last centre before the first finish
    after = steps[first]
    if restart == "random":
        assert after.info["phase"] == "restart"
        assert knobs_apart(after.route, finished) >= 3
        assert steps[first + 1].info["centre"] == after.route or after.state != "COMPLETE"
    else:
        assert after.info["phase"] == "local"
        assert knobs_apart(after.info["centre"], finished) >= 3


@pytest.mark.slow
def test_finds_the_optimum_and_avoids_failures(rec):
    """Over 16 seeds of 60 builds (about half the space fails or is infeasible): the optimum on
    most, and a share of failed builds well below random search's on the same seeds. (The mean,
    not the worst of two seeds against the best of two: one build more or less in one seed moved
    that statistic across its line. Not "the optimum every time": over seeds 0-47 the optimum is
    reached on 42, mean 96.8-97.0 %, with failures explained away by the sizes' model or not
    (session 50); a seed that misses stops in the other basin, at 66.7 %, one in 8-16 seeds.)"""
    runs = [simulate("hybrid", rec, 60, seed=s, budget_fraction=0.0) for s in range(16)]
    rnd = [simulate("random", rec, 60, seed=s) for s in range(16)]
    found = [r.found_optimum_fraction for r in runs]
    assert sum(f == pytest.approx(1.0) for f in found) >= 13
    assert sum(found) / len(found) >= 0.95
    mean = sum(failed_share(r) for r in runs) / len(runs)
    assert mean < 0.8 * sum(failed_share(r) for r in rnd) / len(rnd)


def test_seeds_differ_and_a_seed_repeats(rec):
    runs = [simulate("hybrid", rec, 30, seed=s, budget_fraction=0.0) for s in range(3)]
    assert len({tuple(step.route for step in r.trace) for r in runs}) == 3
    again = simulate("hybrid", rec, 30, seed=0, budget_fraction=0.0)
    assert [s.route for s in again.trace] == [s.route for s in runs[0].trace]


def test_the_harness_is_honest(rec):
    """Same seed, a recording that agrees only on the routes asked: the same proposals."""
    first = simulate("hybrid", rec, 40, seed=3, budget_fraction=0.0)
    other = recording(scramble_except={s.route for s in first.trace})
    second = simulate("hybrid", other, 40, seed=3, budget_fraction=0.0)
    assert [s.route for s in second.trace] == [s.route for s in first.trace]


@pytest.mark.slow
def test_with_a_prior_it_is_bo(rec):
    prior = load_prior([recording(shift=-1.0)], rec.expression)
    hybrid = simulate("hybrid", rec, 15, seed=0, budget_fraction=0.0, prior=prior)
    bo = simulate("bo", rec, 15, seed=0, budget_fraction=0.0, prior=prior)
    assert [s.route for s in hybrid.trace] == [s.route for s in bo.trace]


def test_options_are_checked(rec):
    for key in ("cycle", "patience", "restart_distance"):
        with pytest.raises(StrategyError, match=key):
            get_strategy("hybrid", rec.expression, db=rec.db, **{key: 0})
    with pytest.raises(StrategyError, match="acquisition"):
        get_strategy("hybrid", rec.expression, db=rec.db, acquisition="nope")
    for bad in ({"stall_patience": -1}, {"strata_floor": 1.5}, {"strata_floor": -0.1}):
        with pytest.raises(StrategyError, match="stall_patience.*strata_floor"):
            get_strategy("hybrid", rec.expression, db=rec.db, **bad)


@pytest.mark.slow
def test_local_moves_take_the_knobs_in_turn():
    """Around a centre, the next local move changes a knob with the fewest of that centre's
    neighbours tried so far (every route of this space builds, so every knob's moves are likely
    to): a 16-valued knob does not take one turn after another while a two-valued one waits (on
    convolution A6000 a climb spent 20 builds across block_size_x). The one-off moves alone:
    the pair moves take their turn as one more knob (``_moves.py``, tested below)."""
    from tests.strategies_tests.test_bo import block_recording

    rec = block_recording()
    sizes = {name: len(values) for name, values in
             ((t.name, t.values) for t in rec.expression.terms)}
    for seed in range(3):
        run = simulate("hybrid", rec, 80, seed=seed, budget_fraction=0.0, pair_moves=False)
        seen: list[dict[str, str]] = []
        local = 0
        for step in run.trace:
            route = dict(Route.parse(step.route).assignments)
            centre = step.info.get("centre")
            if step.info.get("phase") == "local" and centre:
                c = dict(Route.parse(centre).assignments)
                tried = dict.fromkeys(sizes, 0)
                for r in seen:
                    changed = [k for k in sizes if r[k] != c[k]]
                    if len(changed) == 1:
                        tried[changed[0]] += 1
                (knob,) = [k for k in sizes if route[k] != c[k]]
                open_knobs = [k for k in sizes if tried[k] < sizes[k] - 1]
                assert tried[knob] == min(tried[k] for k in open_knobs), (seed, step.builds)
                local += 1
            seen.append(route)
        assert local >= 20  # the check saw a climb


def test_the_learned_failure_model_spends_fewer_builds_on_failures(rec):
    """Issue 40 item 2: the default failure model (pairs and a logistic model on the knobs'
    sizes) against the kernel share alone, same seeds: far fewer failed builds, and each model
    proposal says how likely it judged the route to build."""
    learned = [simulate("hybrid", rec, 60, seed=s, budget_fraction=0.0) for s in range(4)]
    kernel = [simulate("hybrid", rec, 60, seed=s, budget_fraction=0.0, feasibility_model="kernel")
              for s in range(4)]
    mean = lambda runs: sum(failed_share(r) for r in runs) / len(runs)  # noqa: E731
    assert mean(learned) < 0.7 * mean(kernel)
    judged = [s.info["p_build"] for r in learned for s in r.trace if s.info.get("phase") == "local"]
    assert judged and all(0.0 <= p <= 1.0 for p in judged)


def test_a_stalled_search_turns_global_more_often(rec):
    """Issue 40 item 3: after ``stall`` routes without a faster one, every other proposal is a
    global (bo) one instead of one in ``cycle``."""
    from gptuner_core.strategies.hybrid import HybridStrategy

    def globals_(stall: int) -> int:
        run = simulate("hybrid", rec, 60, seed=1, budget_fraction=0.0, stall=stall)
        return sum(s.info.get("phase") == "model" for s in run.trace)

    assert globals_(3) > globals_(0)
    by_latency = {r.latency.median_ms: r for r in rec.records if r.eligible}
    built = [by_latency[k] for k in sorted(by_latency, reverse=True)]  # slower to faster
    failed = next(r for r in rec.records if not r.eligible)
    assert HybridStrategy._stalled([]) == 0
    assert HybridStrategy._stalled(built[:3]) == 0  # each one faster than the ones before
    assert HybridStrategy._stalled([*built[1:3], built[0], failed]) == 2


def stride_space() -> Recording:
    """``stride=1`` needs ``tile > 1`` (``tile=1, stride=1`` is infeasible, as on dedispersion);
    with ``tile > 1`` the stride is faster, but the fastest routes have ``tile=1, stride=0``:
    from a climb's centre with the stride on, that is no one-off move."""
    knobs = {"-t:tile": ["2", "1", "3", "4", "5"], "-t:stride": ["1", "0"],
             "-t:x": [str(v) for v in range(8)], "-t:y": [str(v) for v in range(6)]}

    def outcome(_: int, values: tuple[str, ...]) -> float | None:
        tile, stride, x, y = (int(v) for v in values)
        if tile == 1 and stride == 1:
            return None
        slow = 0.0 if tile == 1 else 0.2 + 0.1 * tile + (0.3 if stride == 0 else 0.0)
        return 1.0 + slow + 0.02 * abs(x - 3) + 0.02 * abs(y - 2)
    return synthetic_recording(knobs, outcome)


def test_a_move_unlikely_to_build_is_repaired_by_a_switch():
    """Issue 40: a one-off move judged unlikely to build (``tile=1`` from a centre with
    ``stride=1``) also competes with one switch flipped (``tile=1, stride=0``), which builds; as
    the move of the knob whose turn it is. With ``repair=False`` every local move is one-off.
    (The pair moves, which also change two knobs, are off here: tested on their own below.)"""
    rec = stride_space()

    def moves(**opts: object) -> list[set[str]]:
        out = []
        for seed in range(3):
            run = simulate("hybrid", rec, 60, seed=seed, budget_fraction=0.0, pair_moves=False, **opts)
            for step in run.trace:
                if step.info.get("phase") == "local":
                    a = dict(Route.parse(step.route).assignments)
                    c = dict(Route.parse(step.info["centre"]).assignments)
                    out.append({k for k in a if a[k] != c[k]})
        return out

    repaired = [m for m in moves() if len(m) > 1]
    assert repaired and all(m == {"-t:tile", "-t:stride"} for m in repaired)
    assert all(len(m) == 1 for m in moves(repair=False))


def switch_trap() -> Recording:
    """Two switches ``s`` and ``t`` (often a code path each): with both off a wide bowl, best
    1.0 at a=1, b=1; either one on alone is slower everywhere (1.5 and more); both on, a bowl
    whose best is 0.5 at a=6, b=6 and whose other routes are slow (from the wide bowl's best,
    no one-off move leads there). ``s=on, t=off`` never builds."""
    knobs = {"-t:a": [str(v) for v in range(8)], "-t:b": [str(v) for v in range(8)],
             "-t:s": ["off", "on"], "-t:t": ["off", "on"]}

    def outcome(_: int, values: tuple[str, ...]) -> float | bool:
        a, b, s, t = int(values[0]), int(values[1]), values[2], values[3]
        if s == "on" and t == "off":
            return False
        if s == "on":
            return 0.5 + 0.3 * ((a - 6) ** 2 + (b - 6) ** 2)
        return (1.0 if t == "off" else 1.5) + 0.05 * ((a - 1) ** 2 + (b - 1) ** 2)
    return synthetic_recording(knobs, outcome)


def test_a_random_restart_starts_in_the_switch_combination_tried_least():
    """Issue 40 item 3 (convolution A100's stuck seeds climbed only in ``read_only=0,
    use_shmem=0``): a random restart starts in the combination of switch values with the fewest
    routes tried, skipping one where two or more were tried and none built. Without
    ``restart_strata`` it is any random route likely to build."""
    rec = switch_trap()

    def restarts(**opts: object) -> list[tuple[tuple[str, str], dict, set]]:
        out = []
        for seed in range(4):
            run = simulate("hybrid", rec, 80, seed=seed, budget_fraction=0.0, **opts)
            tried: dict[tuple[str, str], int] = {}
            built: set[tuple[str, str]] = set()
            for step in run.trace:  # the default route counts among those tried (not a restart)
                a = dict(Route.parse(step.route).assignments)
                key = (a["-t:s"], a["-t:t"])
                if step.info.get("phase") == "restart":
                    out.append((key, dict(tried), set(built)))
                tried[key] = tried.get(key, 0) + 1
                if step.state == "COMPLETE":
                    built.add(key)
        return out

    seen = restarts()
    assert len(seen) >= 4
    for key, tried, built in seen:
        alive = [k for k in [("off", "off"), ("off", "on"), ("on", "off"), ("on", "on")]
                 if not (tried.get(k, 0) >= 2 and k not in built)]
        assert key in alive
        assert tried.get(key, 0) == min(tried.get(k, 0) for k in alive)
    plain = restarts(restart_strata=False)
    assert any(tried.get(key, 0) > min(tried.get(k, 0) for k in tried) for key, tried, _ in plain)


def ridge_space() -> Recording:
    """Fast routes only on the line ``x + y = 11`` (1.0 at x=9, y=2, slower by 0.1 a step along
    the line); off it 2.0 and more. From a route on the line every one-off move of ``x`` or ``y``
    leaves it, so a climb along it needs both moved one value each (on convolution A100
    ``tile_size_x`` 2 -> 1 with ``tile_size_y`` 4 -> 3)."""
    knobs = {"-t:x": [str(v) for v in range(12)], "-t:y": [str(v) for v in range(12)],
             "-t:z": [str(v) for v in range(8)]}

    def outcome(_: int, values: tuple[str, ...]) -> float:
        x, y, z = (int(v) for v in values)
        if x + y != 11:
            return 2.0 + 0.1 * abs(x + y - 11) + 0.02 * abs(z - 5)
        return 1.0 + 0.1 * abs(x - 9) + 0.02 * abs(z - 5)
    return synthetic_recording(knobs, outcome)


def test_pair_moves_climb_where_no_one_off_move_is_faster():
    """Issue 40 item 3: with ``pair_moves`` (the default) a local move may move two numeric knobs
    one value each (taking turns with the knobs as one more knob); along the ridge that finds
    the optimum in 80 builds on every seed here, the one-off climb on two of eight."""
    rec = ridge_space()

    def runs(**opts: object) -> list:
        return [simulate("hybrid", rec, 80, seed=s, budget_fraction=0.0, **opts) for s in range(8)]

    paired = runs(pair_moves=True)
    assert all(r.found_optimum_fraction == 1.0 for r in paired)
    steps = []
    for run in paired:
        for step in run.trace:
            if step.info.get("phase") == "local":
                a = dict(Route.parse(step.route).assignments)
                c = dict(Route.parse(step.info["centre"]).assignments)
                steps.append(sorted(abs(int(a[k]) - int(c[k])) for k in a if a[k] != c[k]))
    assert [1, 1] in steps  # the pair moves: two knobs, one value each
    assert all(len(s) == 1 or s == [1, 1] for s in steps)
    assert sum(r.found_optimum_fraction == 1.0 for r in runs(pair_moves=False)) <= 4
