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


def candidate_label(record: CandidateRecord, *, route: bool = True) -> str:
    """``#N · STATE · route`` (cut to 140 characters)."""
    text = f"#{record.number} · {record.state.value}"
    return (f"{text} · {record.requested_route or '(default)'}" if route else text)[:140]


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
    if len(records) <= limit and not q:  # a small study: every candidate, in record order
        labels = {r.number: candidate_label(r, route=route) for r in records}
        return CandidateChoices(numbers=tuple(labels), labels=labels, matched=len(records),
                                total=len(records))
    labels = {n: candidate_label(by_number[n], route=route) for n in wanted}
    matched = 0
    for r in records:
        if q:
            label = candidate_label(r, route=True).lower()
            if q not in label and not (exact.isdigit() and str(r.number).startswith(exact)):
                continue
        matched += 1
        if len(labels) < limit and r.number not in labels:
            labels[r.number] = candidate_label(r, route=route)
    return CandidateChoices(numbers=tuple(labels), labels=labels, matched=matched, total=len(records))
