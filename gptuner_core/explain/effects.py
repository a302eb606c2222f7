"""Knob main effects with uncertainty, from every candidate of a study.

For each knob value other than the knob's default:

* **failure rate** over all finished candidates that set it (build failures, crashes, timeouts
  and accuracy failures all count), with a Wilson 95 % interval, next to the failure rate of the
  candidates at the default value;
* **speed-up** over the eligible ones, with a 95 % CI that adds the spread between candidates
  (when there are several) to each candidate's own measurement CI (its latency
  ``ci_low``/``ci_high``, as a standard error on the log scale), so a value measured once still
  gets an honest interval. It is **paired** when the study holds partners: a candidate with the
  value is compared with the candidates whose *requested* routes set every other knob the same
  way and this knob to its default (for one-at-a-time searches, the default route itself), and the
  log ratios are averaged over the pairs. Without partners (random designs) it falls back to the
  **marginal** ratio of geometric means of the default group and the value group, which other
  knobs varying in both groups can bias; ``method`` says which was used.

A candidate's knob values are its effective route (what the backend reports it applied; the
requested route when the build failed before reporting) resolved against the defaults (a knob it
does not name is at its default). Duplicates are left out: they repeat another candidate's build. Pure Python; no pandas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.records import CandidateState


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord

Z95 = 1.96
FAILED_STATES = frozenset({
    CandidateState.BUILD_FAILED, CandidateState.CRASHED, CandidateState.TIMED_OUT,
    CandidateState.ACCURACY_FAILED,
})


@dataclass(frozen=True, slots=True, kw_only=True)
class KnobEffect:
    """Main effect of ``knob=value`` against ``knob=default``.

    ``speedup`` > 1 means routes with the value are faster than routes at the default;
    ``None`` when either group has no eligible candidate.
    """

    knob: str
    value: str
    default: str
    n: int
    n_failed: int
    failure_rate: float
    failure_ci: tuple[float, float]
    default_n: int
    default_failure_rate: float
    n_eligible: int
    default_n_eligible: int
    speedup: float | None
    speedup_ci: tuple[float, float] | None
    method: str = "marginal"

    @property
    def significant(self) -> bool:
        """The speed-up CI excludes 1 (faster or slower beyond measurement noise)."""
        ci = self.speedup_ci
        return ci is not None and (ci[0] > 1.0 or ci[1] < 1.0)


def route_values(route: str | None) -> dict[str, str]:
    """``"-a=1 -b=x"`` -> ``{"-a": "1", "-b": "x"}`` (tolerant of malformed tokens)."""
    out: dict[str, str] = {}
    for token in (route or "").split():
        name, eq, value = token.partition("=")
        if eq:
            out[name] = value
    return out


def route_of(record: CandidateRecord) -> str:
    """The route the candidate really ran: effective when reported, else requested."""
    return record.effective_route or record.requested_route or ""


def candidate_values(record: CandidateRecord, defaults: Mapping[str, str], knobs: Sequence[str]) -> dict[str, str]:
    """Every knob in ``knobs`` for this candidate: its route's value, else the default."""
    pairs = route_values(route_of(record))
    return {k: pairs.get(k, defaults.get(k, "")) for k in knobs}


def varied_knobs(records: Sequence[CandidateRecord], defaults: Mapping[str, str]) -> list[str]:
    """Knobs that take more than one value across the candidates (route order)."""
    names: list[str] = []
    for r in records:
        names += [n for n in route_values(route_of(r)) if n not in names]
    out = []
    for n in names:
        seen = {route_values(route_of(r)).get(n, defaults.get(n, "")) for r in records}
        if len(seen) > 1:
            out.append(n)
    return out


def is_failed(record: CandidateRecord) -> bool:
    return record.state in FAILED_STATES


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k/n`` (``(0, 1)`` when ``n == 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def _log_latency(record: CandidateRecord) -> tuple[float, float] | None:
    """(log median, its standard error from the latency CI) of an eligible candidate."""
    lat = record.latency
    if not record.eligible or lat is None or lat.median_ms <= 0:
        return None
    lo, hi = lat.ci_low_ms, lat.ci_high_ms
    se = (math.log(hi) - math.log(lo)) / (2 * Z95) if lo > 0 and hi > lo else 0.0
    return math.log(lat.median_ms), se


def group_log_mean(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Mean of log latencies and its standard error (between-candidate + measurement)."""
    n = len(points)
    mean = sum(p[0] for p in points) / n
    between = sum((p[0] - mean) ** 2 for p in points) / (n - 1) / n if n > 1 else 0.0
    within = sum(p[1] ** 2 for p in points) / (n * n)
    return mean, math.sqrt(between + within)


def _speedup(base: list[tuple[float, float]], other: list[tuple[float, float]]) -> tuple[float | None, tuple[float, float] | None]:
    if not base or not other:
        return None, None
    mb, sb = group_log_mean(base)
    mo, so = group_log_mean(other)
    d = mb - mo
    half = Z95 * math.hypot(sb, so)
    return math.exp(d), (math.exp(d - half), math.exp(d + half))


def _partners(
    group: list[CandidateRecord], base: list[CandidateRecord], knob: str,
    defaults: Mapping[str, str], knobs: Sequence[str],
) -> dict[int, list[CandidateRecord]]:
    """Candidate number -> default-valued candidates whose requested routes match it elsewhere."""
    others = [k for k in knobs if k != knob]

    def design(r: CandidateRecord) -> tuple[str, ...]:
        pairs = route_values(r.requested_route)
        return tuple(pairs.get(k, defaults.get(k, "")) for k in others)

    by_design: dict[tuple[str, ...], list[CandidateRecord]] = {}
    for b in base:
        by_design.setdefault(design(b), []).append(b)
    return {r.number: by_design[design(r)] for r in group if design(r) in by_design}


def _paired_speedup(
    group: list[CandidateRecord], partners: dict[int, list[CandidateRecord]]
) -> tuple[float | None, tuple[float, float] | None]:
    """Mean log ratio over (partner, candidate) pairs where both are eligible."""
    diffs: list[tuple[float, float]] = []
    for r in group:
        c = _log_latency(r)
        if c is None:
            continue
        for p in partners.get(r.number, []):
            d = _log_latency(p)
            if d is not None:
                diffs.append((d[0] - c[0], math.hypot(d[1], c[1])))
    if not diffs:
        return None, None
    mean, se = group_log_mean(diffs)
    half = Z95 * se
    return math.exp(mean), (math.exp(mean - half), math.exp(mean + half))


def finished(records: Sequence[CandidateRecord]) -> list[CandidateRecord]:
    """Finished candidates, duplicates excluded (they repeat another candidate's build)."""
    return [r for r in records if r.state.is_finished() and r.state is not CandidateState.DUPLICATE]


def main_effects(records: Sequence[CandidateRecord], defaults: Mapping[str, str]) -> list[KnobEffect]:
    """One :class:`KnobEffect` per non-default value of every varied knob."""
    recs = finished(records)
    knobs = varied_knobs(recs, defaults)
    values = [candidate_values(r, defaults, knobs) for r in recs]
    out = []
    for knob in knobs:
        default = defaults.get(knob, "")
        base = [r for r, v in zip(recs, values, strict=True) if v[knob] == default]
        seen = list(dict.fromkeys(v[knob] for v in values if v[knob] != default))
        for value in seen:
            group = [r for r, v in zip(recs, values, strict=True) if v[knob] == value]
            k = sum(map(is_failed, group))
            partners = _partners(group, base, knob, defaults, knobs)
            if partners:
                method = "paired"
                base_used = list({p.number: p for ps in partners.values() for p in ps}.values())
                speedup, ci = _paired_speedup(group, partners)
            else:
                method, base_used = "marginal", base
                speedup, ci = _speedup([p for p in map(_log_latency, base) if p is not None],
                                       [p for p in map(_log_latency, group) if p is not None])
            base_failed = sum(map(is_failed, base_used))
            pts = [p for p in map(_log_latency, group) if p is not None]
            base_pts = [p for p in map(_log_latency, base_used) if p is not None]
            out.append(KnobEffect(
                knob=knob, value=value, default=default, n=len(group), n_failed=k,
                failure_rate=k / len(group), failure_ci=wilson(k, len(group)),
                default_n=len(base_used),
                default_failure_rate=base_failed / len(base_used) if base_used else 0.0,
                n_eligible=len(pts), default_n_eligible=len(base_pts), speedup=speedup, speedup_ci=ci,
                method=method,
            ))
    return out
