"""Best-so-far curves of a search and random search's expectation on a recorded space.

A curve is the best speed-up found so far after each build, against builds and against the
build seconds spent, as a fraction of the recorded optimum where the space is recorded.

Random search (the default route first, then uniform draws without replacement from the rest of
the full product; failed and infeasible routes are spent builds that find nothing):

* by builds, its expected best is exact: with every other route's value ``w = max(v, v0)``
  (``v`` its recorded speed-up, 0 when failed or infeasible, ``v0`` the default's) sorted
  descending, ``E[best after k] = sum_i w_(i) P(the i-th is the best of k-1 draws)``,
  ``P = C(M-i, k-2) / C(M, k-1)`` for ``M`` other routes;
* by build seconds, and its band (10th-90th percentile), from ``draws`` cheap random orders of
  the recording (recorded build times; an infeasible route costs none: nothing was built).

numpy only; the CLI (``gptuner replay``), the dashboard's History view and the HTML report use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from gptuner_core.recording import Recording
    from gptuner_core.records import CandidateRecord

BAND = (10, 90)
#: random search's expectation and band are given per build up to this many builds; past it at
#: this many build counts spread evenly to the last build (a whole imported space has 10,000+)
MAX_BAND_POINTS = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class Curve:
    """Best-so-far value after each build (``builds`` 1..n) and the build seconds spent by then."""

    builds: tuple[int, ...]
    best: tuple[float, ...]
    seconds: tuple[float, ...]

    def at_build(self, k: int) -> float:
        """Best after ``k`` builds (the last value when the search stopped earlier)."""
        if not self.best:
            return 0.0
        return self.best[min(k, len(self.best)) - 1]

    def at_seconds(self, t: float) -> float:
        """Best among the builds finished within ``t`` build seconds."""
        import bisect

        i = bisect.bisect_right(self.seconds, t)
        return self.best[i - 1] if i else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RandomBaseline:
    """Random search on a recorded space, as fractions of the optimum."""

    builds: tuple[int, ...]
    expected: tuple[float, ...]  # exact, per build count
    low: tuple[float, ...]
    high: tuple[float, ...]
    seconds: tuple[float, ...]  # a grid of build seconds
    expected_s: tuple[float, ...]
    low_s: tuple[float, ...]
    high_s: tuple[float, ...]
    failed_share: float  # expected share of builds on failed or infeasible routes (after the default)

    def expected_at(self, k: int) -> float:
        """Expected best after ``k`` builds (at the largest laid-out build count <= ``k``)."""
        import bisect

        i = bisect.bisect_right(self.builds, k)
        return self.expected[max(i, 1) - 1]

    def expected_at_seconds(self, t: float) -> float:
        import bisect

        i = bisect.bisect_right(self.seconds, t)
        return self.expected_s[i - 1] if i else 0.0


def _space(recording: Recording) -> tuple[Any, Any, float, float]:
    """Values (fraction of the optimum, 0 = failed/infeasible) and build seconds of every route
    other than the default, the default's value and build seconds."""
    import numpy as np

    opt, _ = recording.optimum()
    base = recording.baseline
    base_key = recording.expression.baseline().key(recording.db)
    others = [(k, r) for k, r in recording.by_key.items() if k != base_key]
    size = recording.expression.count("full")
    absent = max(0, size - 1 - len(others))
    vals = np.zeros(len(others) + absent)
    secs = np.zeros(len(others) + absent)
    for i, (_, rec) in enumerate(others):
        s = recording.speedup(rec)
        vals[i] = (s or 0.0) / opt
        secs[i] = rec.build_time_s or 0.0
    return vals, secs, (recording.speedup(base) or 0.0) / opt, base.build_time_s or 0.0


#: routes of the largest space random search's baseline lays out (one value per route)
MAX_BASELINE_ROUTES = 10**7


def baseline_note(recording: Recording) -> str:
    """Why there is no random-search baseline for ``recording`` (``""``: there is one)."""
    size = recording.expression.count("full")
    if size <= MAX_BASELINE_ROUTES:
        return ""
    return (f"no random search's baseline: the space has {size:,} routes (it is laid out for at most "
            f"{MAX_BASELINE_ROUTES:,})")


def random_baseline(recording: Recording, budget: int, *, draws: int = 400, seed: int = 0,
                    grid: int = 60) -> RandomBaseline | None:
    """Random search's expectation and band for ``budget`` builds on ``recording``; ``None`` for
    a space too large to lay out (:func:`baseline_note`). Per build up to ``MAX_BAND_POINTS``
    builds, else at ``MAX_BAND_POINTS`` build counts from 1 to ``budget``."""
    import numpy as np

    if baseline_note(recording):
        return None
    vals, secs, v0, s0 = _space(recording)
    m = len(vals)
    budget = max(1, min(budget, m + 1))
    ks = np.arange(1, budget + 1)
    if budget > MAX_BAND_POINTS:
        ks = np.unique(np.linspace(1, budget, MAX_BAND_POINTS).round().astype(np.int64))
    w = np.sort(np.maximum(vals, v0))[::-1]
    expected = [v0] if ks[0] == 1 else []
    for k in ks[ks >= 2]:
        d = int(k) - 1  # draws besides the default
        # P(the i-th largest is the best of d draws) = C(m-1-i, d-1) / C(m, d), i = 0..m-d:
        # d/m for i = 0, then each next one (m-i-d)/(m-1-i) times the previous
        i = np.arange(m - d)
        p = (d / m) * np.concatenate(([1.0], np.cumprod((m - i - d) / (m - 1 - i))))
        expected.append(float(np.sum(w[: m - d + 1] * p)))
    rng = np.random.default_rng(seed)
    best = np.empty((draws, len(ks)))
    ends = np.empty(draws)
    orders = []
    for j in range(draws):  # the band at the laid-out build counts; each order's last seconds
        pick = rng.choice(m, size=budget - 1, replace=False) if budget > 1 else np.zeros(0, int)
        full = np.maximum.accumulate(np.concatenate(([v0], np.maximum(vals[pick], v0))))
        best[j] = full[ks - 1]
        ends[j] = s0 + float(secs[pick].sum())
        orders.append(pick.astype(np.int32))
    lo, hi = BAND
    top = float(np.median(ends)) if budget > 1 else s0
    ts = np.linspace(0.0, max(top, 1e-9), grid)
    at = np.empty((draws, grid))
    for j, pick in enumerate(orders):
        full = np.maximum.accumulate(np.concatenate(([v0], np.maximum(vals[pick], v0))))
        spent = np.cumsum(np.concatenate(([s0], secs[pick])))
        idx = np.searchsorted(spent, ts, side="right")
        at[j] = np.where(idx > 0, full[np.maximum(idx - 1, 0)], 0.0)
    return RandomBaseline(
        builds=tuple(int(k) for k in ks), expected=tuple(expected),
        low=tuple(np.percentile(best, lo, axis=0)), high=tuple(np.percentile(best, hi, axis=0)),
        seconds=tuple(float(t) for t in ts), expected_s=tuple(at.mean(axis=0)),
        low_s=tuple(np.percentile(at, lo, axis=0)), high_s=tuple(np.percentile(at, hi, axis=0)),
        failed_share=float(np.mean(vals <= 0)) if m else 0.0,
    )


def trace_curve(result: Any, recording: Recording) -> Curve:
    """The curve of a replayed search (``engine.loop.simulate.SimulationResult``), fractions of the optimum."""
    opt = result.optimum_speedup or 1.0
    best: list[float] = []
    seconds: list[float] = []
    spent = 0.0
    for step in result.trace:
        if step.remeasure:
            continue
        found = recording.lookup(step.route)
        spent += (found.build_time_s or 0.0) if found is not None else 0.0
        best.append(step.best_speedup / opt)
        seconds.append(spent)
    return Curve(builds=tuple(range(1, len(best) + 1)), best=tuple(best), seconds=tuple(seconds))


def study_curve(records: Sequence[CandidateRecord], optimum: float | None = None) -> Curve:
    """A study's curve in evaluation order: best eligible speed-up so far (a fraction of
    ``optimum`` when given) against builds and cumulative build seconds."""
    best_v = 0.0
    best: list[float] = []
    seconds: list[float] = []
    spent = 0.0
    for rec in sorted(records, key=lambda r: r.number):
        if not rec.state.is_finished():
            continue
        spent += rec.build_time_s or 0.0
        if rec.eligible and rec.speedup is not None:
            best_v = max(best_v, rec.speedup)
        best.append(best_v / optimum if optimum else best_v)
        seconds.append(spent)
    return Curve(builds=tuple(range(1, len(best) + 1)), best=tuple(best), seconds=tuple(seconds))


def study_recording(config: dict[str, Any], study_dir: str | Path | None = None) -> Recording | None:
    """The recorded space a study searched: its replay backend's recording, or the study itself
    when it is an exhaustively imported space; ``None`` when the space is not recorded."""
    from gptuner_core.errors import GptunerError
    from gptuner_core.recording import load_recording

    source = None
    if config.get("backend") == "replay":
        source = (config.get("backend_options") or {}).get("recording") or config.get("model")
    elif config.get("space") == "exhaustive" and study_dir is not None:
        source = study_dir
    if not source:
        return None
    try:
        rec = load_recording(source)
        rec.optimum()
    except (GptunerError, OSError, ValueError):
        return None
    return rec


def checkpoints(budget: int) -> list[int]:
    """1, 2, 5, 10, 20, 50, ... up to ``budget`` (``budget`` itself last)."""
    out = [k for e in range(0, 9) for k in (10**e, 2 * 10**e, 5 * 10**e) if k < budget]
    return [*out, budget]


def study_curves(records: Sequence[CandidateRecord], config: dict[str, Any],
                 study_dir: str | Path | None = None) -> tuple[Curve, RandomBaseline | None, bool]:
    """A study's curve, random search's baseline for as many builds where its space is recorded,
    and whether the curve is a fraction of the recorded optimum (else the best speed-up)."""
    recording = study_recording(config, study_dir)
    finished = [r for r in records if r.state.is_finished()]
    if recording is None:
        return study_curve(finished), None, False
    opt, _ = recording.optimum()
    budget = max(1, len(finished))
    return study_curve(finished, opt), random_baseline(recording, budget), True


def search_curve_figure(curve: Curve, rand: RandomBaseline | None = None, *, against: str = "builds",
                        fraction: bool = True, name: str = "this search") -> Any:
    """Best so far against ``"builds"`` or ``"seconds"`` (build seconds), with random search's
    expectation and its 10th-90th percentile band when ``rand`` is given."""
    import plotly.graph_objects as go

    from gptuner_core.views.figures import _layout

    scale = 100.0 if fraction else 1.0
    by_builds = against == "builds"
    fig = go.Figure()
    if rand is not None:
        xs = rand.builds if by_builds else rand.seconds
        low, high, mean = (rand.low, rand.high, rand.expected) if by_builds else (rand.low_s, rand.high_s, rand.expected_s)
        fig.add_trace(go.Scatter(x=list(xs), y=[scale * v for v in high], mode="lines", line={"width": 0},
                                 showlegend=False, hoverinfo="skip", name="random p90"))
        fig.add_trace(go.Scatter(x=list(xs), y=[scale * v for v in low], mode="lines", line={"width": 0},
                                 fill="tonexty", fillcolor="rgba(127,127,127,0.2)",
                                 name=f"random search, {BAND[0]}th-{BAND[1]}th percentile"))
        fig.add_trace(go.Scatter(x=list(xs), y=[scale * v for v in mean], mode="lines",
                                 line={"dash": "dash", "color": "#7f7f7f"}, name="random search, expected"))
    xs = curve.builds if by_builds else curve.seconds
    fig.add_trace(go.Scatter(x=list(xs), y=[scale * v for v in curve.best], mode="lines",
                             line={"shape": "hv", "color": "#d62728"}, name=f"{name}, best so far"))
    y = "% of the recorded optimum" if fraction else "best screening speed-up (x)"
    x = "builds" if by_builds else "build seconds"
    return _layout(fig, f"Best so far against {x}", x, y)
