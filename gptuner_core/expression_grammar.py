"""The tokens of trtexec's tunable-expression grammar: terms, values, searches (exact messages).

(The expression itself and its expansion orders live in ``gptuner_core.expressions``.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.errors import ExpressionError


if TYPE_CHECKING:
    from gptuner_core.knobs import KnobDatabase


SEARCHES: tuple[str, ...] = ("fast", "full", "mixed")
"""Search names as trtexec spells them (``--tuningSearch`` and the cache header)."""

_TRIM = " \t"


@dataclass(frozen=True, slots=True)
class Term:
    """One expression token: a knob and its values.

    ``variable`` is True for the bracket form (``-k=[a|b]``, even with a single value) and False
    for a fixed value (``-k=v``, then ``values == (v,)``), exactly like trtexec's ``mIsFixed``.
    """

    name: str
    values: tuple[str, ...]
    variable: bool

    def __str__(self) -> str:
        if self.variable:
            return f"{self.name}=[{'|'.join(self.values)}]"
        return f"{self.name}={self.values[0]}"


def tokenize(text: str) -> list[str]:
    """Split on ``' '`` outside brackets (trtexec's ``BuildRouteExprParser::tokenize``)."""
    tokens: list[str] = []
    current: list[str] = []
    depth = 0
    for c in text:
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == " " and depth == 0:
            if current:
                tokens.append("".join(current))
                current = []
            continue
        current.append(c)
    if current:
        tokens.append("".join(current))
    return tokens


def split_values(inner: str) -> tuple[str, ...]:
    """Split a bracket body on ``|``, trim spaces/tabs, drop empty pieces (``splitPipeDelimited``)."""
    return tuple(v for v in (p.strip(_TRIM) for p in inner.split("|")) if v)


def parse_term(token: str, db: KnobDatabase) -> Term:
    """Parse one token with trtexec's checks, in trtexec's order, with its exact messages."""
    eq = token.find("=")
    if eq < 0:
        msg = f"Invalid expression (no '='): {token}"
        raise ExpressionError(msg)
    name = token[:eq].strip(_TRIM)
    knob = db.get(name)
    if knob is None:
        msg = f"Unknown knob: {name}"
        raise ExpressionError(msg)
    value_str = token[eq + 1 :]
    start = value_str.find("[")
    end = value_str.find("]")
    if start >= 0 and end >= 0 and end > start:
        if value_str[:start].strip(_TRIM):
            msg = f"Invalid expression format (unexpected content before '['): {token}"
            raise ExpressionError(msg)
        if value_str[end + 1 :].strip(_TRIM):
            msg = f"Invalid expression format (unexpected content after ']'): {token}"
            raise ExpressionError(msg)
        inner = value_str[start + 1 : end]
        if "..." in inner:
            msg = f"Unbounded expression not allowed: {token}"
            raise ExpressionError(msg)
        values = split_values(inner)
        if not values:
            msg = f"Empty value list in expression: {token}"
            raise ExpressionError(msg)
        seen: set[str] = set()
        for v in values:
            if v in seen:
                msg = f"Duplicate value '{v}' in expression: {token}"
                raise ExpressionError(msg)
            seen.add(v)
        if knob.values is None:
            msg = f"Knob has unbounded values (int32_t): {name}"
            raise ExpressionError(msg)
        if not all(v in knob.values for v in values):
            msg = f"Invalid value(s) for knob: {name}"
            raise ExpressionError(msg)
        return Term(name, values, True)
    value = value_str.strip(_TRIM)
    if value == "int32_t":
        msg = f"Unbounded expression 'int32_t' not allowed: {token}"
        raise ExpressionError(msg)
    if knob.values is not None and value not in knob.values:
        msg = f"Invalid value for knob: {name}={value}"
        raise ExpressionError(msg)
    return Term(name, (value,), False)


def check_search(search: str) -> str:
    """Return ``search`` if it is ``fast``, ``full`` or ``mixed``; else raise ExpressionError."""
    if search not in SEARCHES:
        msg = f"Unknown tuning search '{search}' (expected one of: fast, full, mixed)"
        raise ExpressionError(msg)
    return search
