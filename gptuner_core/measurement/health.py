"""Per-study measurement health: how far the latency numbers of a study can be trusted.

Built from the stored candidate records and the drift sentinel's baseline events. One call,
:func:`health_summary`, computes every figure once; the dashboard's tiles
(:meth:`HealthSummary.tiles`), the drift chart (``HealthSummary.drift.points``) and the warnings
are all read from that one summary, so a tile can never disagree with its chart (the drift tile
once read +0.0 % from the sentinel events alone while the chart, which also counts candidate #0's
own measurement, showed -85 %).

How a page uses it::

    health = measurement.health_summary(snap.records, baseline_payloads)
    for col, tile in zip(st.columns(4), health.tiles()):
        col.metric(tile.label, tile.value, help=tile.help)
    frame = pd.DataFrame([p.to_json() for p in health.drift.points])  # the chart
    for w in health.warnings: st.warning(w)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from gptuner_core.measurement.drift import _baseline
from gptuner_core.measurement.regimes import Regimes
from gptuner_core.measurement.regimes import detect_regimes


if TYPE_CHECKING:
    from gptuner_core.records import CandidateRecord


#: trtexec warns when the coefficient of variation of GPU compute time exceeds 2.5 %.
CV_THRESHOLD = 0.025
#: The default route moving more than this over a study is reported.
DRIFT_THRESHOLD = 0.05
#: Candidates whose window jumped between two speed levels: warned above this share.
REGIME_SHARE = 0.2


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftPoint:
    """One measurement of the default route: when, median, and drift vs the first (0.05 = +5 %)."""

    after_candidate: int | None
    time: float
    median_ms: float
    source: str
    drift: float

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class DriftView:
    """The default route's measurements over the study: the chart's points and the tile's range."""

    points: tuple[DriftPoint, ...]

    @property
    def range(self) -> tuple[float, float] | None:
        """``(min, max)`` drift, ``None`` with fewer than two measurements."""
        if len(self.points) < 2:
            return None
        values = [p.drift for p in self.points]
        return (min(values), max(values))

    @property
    def text(self) -> str:
        r = self.range
        return "—" if r is None else f"{r[0] * 100:+.1f}% … {r[1] * 100:+.1f}%"

    def to_json(self) -> dict[str, Any]:
        return {"points": [p.to_json() for p in self.points], "range": list(self.range or []) or None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Tile:
    """One health figure as a page shows it: ``st.metric(label, value, help=help)``."""

    key: str
    label: str
    value: str
    help: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _payload(item: Any) -> dict[str, Any]:
    payload = getattr(item, "payload", None)
    if isinstance(payload, dict):  # a storage Event
        return {"time": getattr(item, "time", None), **payload}
    if isinstance(item, dict):
        return item
    b = _baseline(item)  # a Baseline or a (time, median_ms) pair; raises ConfigError otherwise
    return {"time": b.time, "median_ms": b.median_ms, "after_candidate": b.after_candidate}


def drift_view(records: Iterable[CandidateRecord], baseline_events: Iterable[Any]) -> DriftView:
    """The default route's own measurement (candidate #0) plus every drift-sentinel one, by time.

    ``baseline_events``: storage ``Event`` objects, their payload dicts (``time``, ``median_ms``,
    ``after_candidate``), :class:`~gptuner_core.measurement.drift.Baseline` or ``(time, ms)`` pairs.
    """
    raw: list[tuple[float, int | None, float, str]] = []
    first = next((r for r in records if r.number == 0), None)
    if first is not None and first.latency is not None and first.finished_at is not None:
        raw.append((float(first.finished_at), 0, float(first.latency.median_ms), "candidate #0"))
    for item in baseline_events:
        p = _payload(item)
        median = p.get("median_ms")
        if median is None and isinstance(p.get("latency"), dict):
            median = p["latency"].get("median_ms")
        if median and p.get("time") is not None:
            raw.append((float(p["time"]), p.get("after_candidate"), float(median), "re-measured"))
    raw.sort(key=lambda x: x[0])
    ref = raw[0][2] if raw else 1.0
    return DriftView(points=tuple(
        DriftPoint(after_candidate=a, time=t, median_ms=m, source=src, drift=m / ref - 1.0)
        for t, a, m, src in raw
    ))


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthSummary:
    """Measurement health of one study (shares are in 0..1, ``None`` when nothing was measured)."""

    n_measured: int
    median_cv: float | None
    high_cv_share: float | None
    cv_threshold: float
    not_converged_share: float | None
    throttled_share: float | None
    busy_share: float | None
    n_baselines: int
    drift_range: tuple[float, float] | None
    warnings: tuple[str, ...]
    drift: DriftView = DriftView(points=())
    regimes: tuple[Regimes, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.warnings

    def tiles(self) -> tuple[Tile, ...]:
        """The four figures of the health tab, each formatted from this summary."""

        def pct(x: float | None) -> str:
            return "—" if x is None else f"{x:.1%}"

        return (
            Tile(key="median_cv", label="median CV", value=pct(self.median_cv),
                 help=f"trtexec warns above {self.cv_threshold:.1%}"),
            Tile(key="drift", label="default-route drift", value=self.drift.text,
                 help="every measurement of the default route vs its first (the chart below)"),
            Tile(key="busy", label="busy CPU share", value=pct(self.busy_share)),
            Tile(key="throttled", label="throttled share", value=pct(self.throttled_share)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "n_measured": self.n_measured, "median_cv": self.median_cv,
            "high_cv_share": self.high_cv_share, "cv_threshold": self.cv_threshold,
            "not_converged_share": self.not_converged_share,
            "throttled_share": self.throttled_share, "busy_share": self.busy_share,
            "n_baselines": self.n_baselines,
            "drift_range": list(self.drift_range) if self.drift_range else None,
            "warnings": list(self.warnings), "drift": self.drift.to_json(),
            "regimes": [r.to_json() for r in self.regimes],
            "tiles": [t.to_json() for t in self.tiles()],
        }


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def health_summary(
    records: Iterable[CandidateRecord],
    baseline_events: Iterable[Any] = (),
    *,
    cv_threshold: float = CV_THRESHOLD,
    drift_threshold: float = DRIFT_THRESHOLD,
    regimes: Iterable[Regimes] = (),
) -> HealthSummary:
    """Summarize measurement health.

    Args:
        records: the study's candidate records (those without latency are skipped).
        baseline_events: drift-sentinel events (storage ``Event`` objects or their payloads).
        cv_threshold: CV above which a candidate counts as noisy (trtexec's 2.5 %).
        drift_threshold: |drift| above which a warning is given.
        regimes: extra :class:`Regimes` records, e.g. a re-validation's per-process ones
            (``ContenderVerdict.regimes``); bimodal ones become warnings.

    Returns:
        A :class:`HealthSummary` with plain-language ``warnings``.
    """
    records = list(records)
    measured = [r for r in records if r.latency is not None]
    n = len(measured)
    events = list(baseline_events)
    view = drift_view(records, events)
    dr = view.range
    n_base = len(events)
    warnings: list[str] = []
    found = [
        reg for r in measured
        if (reg := detect_regimes(r.samples_ms, scope="window", route=r.number)).bimodal
    ]
    extra = [reg for reg in regimes if reg.bimodal]
    if n == 0:
        return HealthSummary(
            n_measured=0,
            median_cv=None,
            high_cv_share=None,
            cv_threshold=cv_threshold,
            not_converged_share=None,
            throttled_share=None,
            busy_share=None,
            n_baselines=n_base,
            drift_range=dr,
            warnings=("no candidate has a latency measurement yet",),
            drift=view,
            regimes=tuple(extra),
        )
    cvs = np.array([r.latency.cv for r in measured if r.latency is not None], float)
    median_cv = float(np.median(cvs))
    noisy = int(np.sum(cvs > cv_threshold))
    not_conv = sum(
        1
        for r in measured
        if r.latency is not None and r.latency.stop_reason not in ("converged", "")
    )
    throttled = sum(1 for r in measured if r.telemetry.get("throttled"))
    busy = sum(1 for r in measured if r.telemetry.get("busy"))

    if noisy / n > 0.5:
        warnings.append(
            f"{noisy} of {n} candidates ({_pct(noisy / n)}) had a latency CV above "
            f"{cv_threshold * 100:.1f}% (trtexec's warning threshold; median CV "
            f"{median_cv * 100:.1f}%): measurements are noisy; stop other programs, and on a GPU "
            f"lock the clocks or keep it cool"
        )
    if not_conv / n > 0.5:
        warnings.append(
            f"{not_conv} of {n} candidates ({_pct(not_conv / n)}) stopped at the sample or time "
            f"limit before the median was known to the target precision; raise max_time_s or "
            f"accept a wider target_rel_ci"
        )
    if throttled:
        warnings.append(
            f"{throttled} of {n} candidates ({_pct(throttled / n)}) were measured while the GPU "
            f"was throttled (power cap, thermal or clock slowdown); their throttled windows were "
            f"excluded and re-measured where possible"
        )
    if busy / n > 0.2:
        warnings.append(
            f"other processes were busy during {busy} of {n} candidate measurements "
            f"({_pct(busy / n)}); close them (the dashboard included) for steadier numbers"
        )
    if found and len(found) / n > REGIME_SHARE:
        worst = max(found, key=lambda g: g.separation or 0.0)
        warnings.append(
            f"{len(found)} of {n} candidates ({_pct(len(found) / n)}) had measurement windows "
            f"that jumped between two speed levels (worst: #{worst.route} at ~{worst.fast_ms:.4g} "
            f"and ~{worst.slow_ms:.4g} ms); another program is competing for the CPU or the "
            f"clock changes: close other programs, and trust only re-validated verdicts"
        )
    warnings.extend(reg.message for reg in extra)
    if dr is not None and max(abs(dr[0]), abs(dr[1])) > drift_threshold:
        warnings.append(
            f"the default route drifted from {dr[0] * 100:+.1f}% to {dr[1] * 100:+.1f}% over the "
            f"study (more than {drift_threshold * 100:.0f}%); compare candidates with the "
            f"baseline nearest in time"
        )
    return HealthSummary(
        n_measured=n,
        median_cv=median_cv,
        high_cv_share=noisy / n,
        cv_threshold=cv_threshold,
        not_converged_share=not_conv / n,
        throttled_share=throttled / n,
        busy_share=busy / n,
        n_baselines=n_base,
        drift_range=dr,
        warnings=tuple(warnings),
        drift=view,
        regimes=(*found, *extra),
    )
