"""Per-study measurement health: how far the latency numbers of a study can be trusted.

Built from the stored candidate records and the drift sentinel's baseline events. The figures are
shown next to the results and the warnings are plain sentences with a hint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from gptuner_core.measurement.drift import drift_range as _drift_range


if TYPE_CHECKING:
    from gptuner_core.records import CandidateRecord


#: trtexec warns when the coefficient of variation of GPU compute time exceeds 2.5 %.
CV_THRESHOLD = 0.025
#: The default route moving more than this over a study is reported.
DRIFT_THRESHOLD = 0.05


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

    @property
    def ok(self) -> bool:
        return not self.warnings

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["drift_range"] = list(self.drift_range) if self.drift_range else None
        data["warnings"] = list(self.warnings)
        return data


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def health_summary(
    records: Iterable[CandidateRecord],
    baseline_events: Iterable[Any] = (),
    *,
    cv_threshold: float = CV_THRESHOLD,
    drift_threshold: float = DRIFT_THRESHOLD,
) -> HealthSummary:
    """Summarize measurement health.

    Args:
        records: the study's candidate records (those without latency are skipped).
        baseline_events: drift-sentinel events (anything :func:`drift.baselines` accepts).
        cv_threshold: CV above which a candidate counts as noisy (trtexec's 2.5 %).
        drift_threshold: |drift| above which a warning is given.

    Returns:
        A :class:`HealthSummary` with plain-language ``warnings``.
    """
    measured = [r for r in records if r.latency is not None]
    n = len(measured)
    events = list(baseline_events)
    dr = _drift_range(events)
    n_base = len(events)
    warnings: list[str] = []
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
    )
