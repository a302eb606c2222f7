"""Failure triage: failed candidates clustered by error signature, explained by knob values.

A signature is the failure state plus the error text with the run-specific parts masked
(numbers, hex ids, paths, quoted names), so "every route with ``-quant:weight_type=int4`` fails
accuracy" collects into one cluster. For each cluster the knob values that *all* its members
share are tested against the whole study: a value whose every candidate failed is a cause
(``always_fails``), and :func:`exclusion_expression` rewrites the study's expression without it
(the "one click" the dashboard offers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.explain.effects import candidate_values
from gptuner_core.explain.effects import finished
from gptuner_core.explain.effects import is_failed
from gptuner_core.explain.effects import route_of
from gptuner_core.explain.effects import route_values


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord

_MASKS = (
    (re.compile(r"(/[\w.+-]+)+"), "<path>"),
    (re.compile(r"0x[0-9a-fA-F]+"), "<hex>"),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "'…'"),
    (re.compile(r"\d+(\.\d+)?(e[-+]?\d+)?"), "N"),
)


def signature(record: CandidateRecord) -> str:
    """``STATE: masked first line of the error`` (at most 120 characters)."""
    text = (record.error or "").strip().splitlines()[0] if record.error else ""
    for pattern, repl in _MASKS:
        text = pattern.sub(repl, text)
    return f"{record.state.value}: {' '.join(text.split())[:120]}".rstrip(": ")


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    """A knob value shared by every member of a cluster, checked against the whole study."""

    knob: str
    value: str
    n_with: int
    n_failed_with: int

    @property
    def always_fails(self) -> bool:
        return self.n_with > 0 and self.n_failed_with == self.n_with

    def __str__(self) -> str:
        every = "every" if self.always_fails else f"{self.n_failed_with} of {self.n_with}"
        return f"{every} route with {self.knob}={self.value} fails"


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureCluster:
    """Failed candidates with one signature, the knob values they share and an exclusion."""

    signature: str
    numbers: tuple[int, ...]
    example_error: str
    causes: tuple[Cause, ...]
    exclude_expression: str | None

    @property
    def explanation(self) -> str:
        sure = [c for c in self.causes if c.always_fails]
        if sure:
            return "; ".join(str(c) for c in sure)
        if self.causes:
            return str(self.causes[0]) + " (not every such route fails)"
        return "no knob value is shared by all of these candidates"


def exclusion_expression(expression: str, excluded: Sequence[tuple[str, str]]) -> str | None:
    """``expression`` with each ``(knob, value)`` removed from that knob's value list.

    Returns ``None`` when nothing can be removed (the knob is not a variable term, or removing
    the value would leave it empty).
    """
    out, changed = [], False
    drop: dict[str, set[str]] = {}
    for k, v in excluded:
        drop.setdefault(k, set()).add(v)
    for token in expression.split():
        name, eq, value = token.partition("=")
        if eq and name in drop and value.startswith("[") and value.endswith("]"):
            values = [x for x in value[1:-1].split("|") if x]
            kept = [x for x in values if x not in drop[name]]
            if kept and len(kept) < len(values):
                token = f"{name}=[{'|'.join(kept)}]"
                changed = True
        out.append(token)
    return " ".join(out) if changed else None


def triage(
    records: Sequence[CandidateRecord], defaults: Mapping[str, str], expression: str = ""
) -> list[FailureCluster]:
    """Clusters of failed candidates, largest first."""
    recs = finished(records)
    knobs = list(dict.fromkeys(k for r in recs for k in route_values(route_of(r))))
    values = {r.number: candidate_values(r, defaults, knobs) for r in recs}
    clusters: dict[str, list[CandidateRecord]] = {}
    for r in recs:
        if is_failed(r):
            clusters.setdefault(signature(r), []).append(r)
    out = []
    for sig, members in clusters.items():
        shared = [
            (k, values[members[0].number][k]) for k in knobs
            if values[members[0].number][k] != defaults.get(k, "")
            and all(values[m.number][k] == values[members[0].number][k] for m in members)
        ]
        causes = []
        for k, v in shared:
            with_value = [r for r in recs if values[r.number][k] == v]
            causes.append(Cause(knob=k, value=v, n_with=len(with_value),
                                n_failed_with=sum(map(is_failed, with_value))))
        causes.sort(key=lambda c: (-(c.n_failed_with / c.n_with), -c.n_with))
        sure = [(c.knob, c.value) for c in causes if c.always_fails]
        out.append(FailureCluster(
            signature=sig, numbers=tuple(m.number for m in members),
            example_error=members[0].error or "", causes=tuple(causes),
            exclude_expression=exclusion_expression(expression, sure[:1]) if sure and expression else None,
        ))
    return sorted(out, key=lambda c: -len(c.numbers))
