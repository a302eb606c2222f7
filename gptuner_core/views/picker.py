"""Which candidates a page's picker offers: every one in a small study, a bounded list in a big
one (a selectbox of 100,000 labels is megabytes sent to the browser on every rerun).

The list always holds the candidates a page needs at hand (the default route, the winner, the
current pick) and then the candidates matching the search text, up to ``limit``.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from gptuner_core.records import CandidateRecord

MAX_OPTIONS = 200


def candidate_label(record: CandidateRecord, *, route: bool = True,
                    default_ms: float | None = None) -> str:
    """``#N · STATE · route`` (cut to 140 characters); with ``route=False`` the short label of
    :func:`short_label`."""
    if not route:
        return short_label(record, default_ms=default_ms)
    text = f"#{record.number} · {record.state.value}"
    return f"{text} · {record.requested_route or '(default)'}"[:140]


def short_label(record: CandidateRecord, *, default_ms: float | None = None) -> str:
    """A label a select box shows whole: ``#5 · screening 1.23x · 3 knobs`` (the state too when
    it is not COMPLETE; "default route" for the route that sets no knob). A route of five knobs
    was cut mid-knob by the box (issue 39 item 7's screenshots); the page shows the route in
    full below the box. The speed-up is the screening one (this candidate's median against the
    default's, one process each), never the verdict's, and says so."""
    from gptuner_core.records import CandidateState
    from gptuner_core.views._frames import route_pairs

    parts = [f"#{record.number}"]
    if record.state is not CandidateState.COMPLETE:
        parts.append(record.state.value)
    knobs = len(route_pairs(record.requested_route))
    if not knobs:
        parts.append("default route")
        return " · ".join(parts)
    ms = record.latency.median_ms if record.latency is not None else None
    if ms and default_ms:
        parts.append(f"screening {default_ms / ms:.2f}x")
    parts.append(f"{knobs} knob{'' if knobs == 1 else 's'}")
    return " · ".join(parts)


def default_latency(records: Sequence[CandidateRecord]) -> float | None:
    """The default route's (candidate #0's) median latency, if measured."""
    for r in records:
        if r.number == 0:
            return r.latency.median_ms if r.latency is not None else None
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateChoices:
    """The numbers a picker offers (in order), their labels and how many matched in all."""

    numbers: tuple[int, ...]
    labels: Mapping[int, str]
    matched: int
    total: int

    @property
    def truncated(self) -> bool:
        return len(self.numbers) < self.total

    def caption(self) -> str:
        """One line saying what is offered (empty when it is every candidate)."""
        if not self.truncated:
            return ""
        return (f"Offering {len(self.numbers):,} of {self.total:,} candidates "
                f"({self.matched:,} match the search); type a number, state or knob value to narrow.")


def candidate_choices(records: Sequence[CandidateRecord], *, query: str = "",
                      keep: Iterable[int | None] = (), limit: int = MAX_OPTIONS,
                      route: bool = True) -> CandidateChoices:
    """The candidates to offer: ``keep`` first (those present), then the matches of ``query``
    (case-insensitive substring of the label, ``#N`` or ``N`` picks candidate N first) in record
    order, ``limit`` in all (more only when ``keep`` alone is longer)."""
    by_number = {r.number: r for r in records}
    wanted = [n for n in dict.fromkeys(keep) if n is not None and n in by_number]
    q = query.strip().lower()
    exact = q.lstrip("#")
    if exact.isdigit() and int(exact) in by_number:
        wanted.insert(0, int(exact))
        wanted = list(dict.fromkeys(wanted))
    base = None if route else default_latency(records)
    if len(records) <= limit and not q:  # a small study: every candidate, in record order
        labels = {r.number: candidate_label(r, route=route, default_ms=base) for r in records}
        return CandidateChoices(numbers=tuple(labels), labels=labels, matched=len(records),
                                total=len(records))
    labels = {n: candidate_label(by_number[n], route=route, default_ms=base) for n in wanted}
    matched = 0
    for r in records:
        if q:
            label = candidate_label(r, route=True).lower()
            if q not in label and not (exact.isdigit() and str(r.number).startswith(exact)):
                continue
        matched += 1
        if len(labels) < limit and r.number not in labels:
            labels[r.number] = candidate_label(r, route=route, default_ms=base)
    return CandidateChoices(numbers=tuple(labels), labels=labels, matched=matched, total=len(records))
