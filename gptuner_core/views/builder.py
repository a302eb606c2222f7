"""The expression builder's model: the text is the one source of truth, pickers are its view.

:func:`selection_from_text` parses the text back into picker state, :func:`compose_text` turns
picker state into text, :func:`picker_options` keeps picked knobs listed whatever the search
shows, :func:`expression_problem` explains a bad expression (the bad value and the allowed ones),
and :func:`strategy_counts` says how many routes each strategy would run. No streamlit here.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ExpressionError
from gptuner_core.errors import GptunerError


if TYPE_CHECKING:
    from collections.abc import Iterable
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """Picker state equivalent to an expression.

    ``knobs`` in expression order; ``values[name]`` the listed values; ``bracketed`` the knobs
    written ``-k=[v]`` with a single value (variable in trtexec's sense), so a round trip through
    the pickers never turns them into fixed ``-k=v``.
    """

    knobs: tuple[str, ...] = ()
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    bracketed: frozenset[str] = frozenset()


def selection_from_text(text: str, db: KnobDatabase) -> Selection:
    """Parse ``text`` (trtexec grammar) into picker state; raises ExpressionError when invalid.

    Blank text is the empty selection.
    """
    from gptuner_core.expressions import Expression

    if not text.strip():
        return Selection()
    expr = Expression.parse(text.strip(), db)
    return Selection(
        knobs=expr.names,
        values={t.name: t.values for t in expr.terms},
        bracketed=frozenset(t.name for t in expr.terms if t.variable and len(t.values) == 1),
    )


def compose_text(
    knobs: Sequence[str],
    values: Mapping[str, Sequence[str]],
    bracketed: Iterable[str] = (),
) -> str:
    """Expression text for picked ``knobs``: ``-k=v`` for one value, ``-k=[a|b]`` for several.

    A knob with no value picked is left out (it stays at its default); a knob in ``bracketed``
    keeps the bracket form with one value.
    """
    keep = set(bracketed)
    parts = []
    for name in knobs:
        vals = [str(v).strip() for v in values.get(name, ()) if str(v).strip()]
        if not vals:
            continue
        if len(vals) == 1 and name not in keep:
            parts.append(f"{name}={vals[0]}")
        else:
            parts.append(f"{name}=[{'|'.join(vals)}]")
    return " ".join(parts)


def picker_options(shown: Iterable[str], picked: Sequence[str]) -> list[str]:
    """Options of the knob picker: every picked knob (kept even when the search hides it), then
    the knobs the search shows."""
    out = list(dict.fromkeys(picked))
    seen = set(out)
    out += [n for n in shown if n not in seen]
    return out


def _allowed(db: KnobDatabase, name: str) -> str:
    knob = db[name]
    if knob.values is None:
        return f"any {knob.unbounded_type}"
    return "|".join(knob.values)


def expression_problem(text: str, db: KnobDatabase) -> str | None:
    """``None`` for a valid (or blank) expression, else one line: trtexec's message plus the bad
    value(s) and the allowed ones (or the closest knob names)."""
    from gptuner_core.expressions import Expression

    if not text.strip():
        return None
    try:
        Expression.parse(text.strip(), db)
    except ExpressionError as exc:
        message = str(exc)
    else:
        return None
    return clip(_problem(text, db, message))


#: longest problem line shown: a pasted expression of thousands of values is never echoed whole
MAX_PROBLEM = 300


def clip(line: str, limit: int = MAX_PROBLEM) -> str:
    """``line`` cut to ``limit`` characters, saying how much was left out."""
    return line if len(line) <= limit else f"{line[:limit]}… ({len(line) - limit:,} more characters)"


def _values_text(values: list[str], shown: int = 5) -> str:
    more = f" and {len(values) - shown:,} more" if len(values) > shown else ""
    return "|".join(values[:shown]) + more


def file_problem(name: str, text: str) -> str | None:
    """The first line of an expression file that holds a word that is no ``-knob=value`` token
    and no ``#`` comment, said with the file's name and line (``None`` when every line is fine);
    the text box's message named the word alone and told to use an expression file."""
    from gptuner_core.expressions import expression_file_text
    from gptuner_core.expressions import tokenize

    for i, line in enumerate(text.split("\n"), start=1):
        kept = expression_file_text(line)
        if any("=" not in token for token in tokenize(kept)):
            return (f"expression file '{name}', line {i}: {clip(line.strip(), 80)!r} is not "
                    "-knob=value tokens; start the line with '#' to keep it as a comment")
    return None


def _problem(text: str, db: KnobDatabase, message: str) -> str:
    from gptuner_core.expressions import parse_term
    from gptuner_core.expressions import split_values
    from gptuner_core.expressions import tokenize

    for token in tokenize(text.strip()):
        name, _, value = token.partition("=")
        if value.count("[") != value.count("]"):
            missing = "]" if value.count("[") > value.count("]") else "["
            return (f"{name.strip()}: the value list is not closed: '{missing}' is missing "
                    f"(got {clip(token, 80)!r})")
        try:
            parse_term(token, db)
        except ExpressionError as exc:
            name = token.partition("=")[0].strip(" \t")
            value = token.partition("=")[2]
            if "=" not in token:
                return (f"{exc} — every token is -knob=value or -knob=[v1|v2] "
                        f"(got {clip(token, 80)!r}; '#' comments belong in expression files)")
            if name not in db:
                close = difflib.get_close_matches(name, [k.name for k in db], n=3, cutoff=0.6)
                hint = f"; did you mean {', '.join(close)}?" if close else ""
                return f"{exc} (not in the knob database of {len(db)} knobs{hint})"
            knob = db[name]
            if knob.values is not None:
                start, end = value.find("["), value.find("]")
                given = split_values(value[start + 1:end]) if 0 <= start < end else (value.strip(" \t"),)
                bad = [v for v in given if v not in knob.values]
                if bad:
                    return (f"{clip(str(exc), 120)} — not allowed: {_values_text(bad)}; "
                            f"allowed for {name}: "
                            f"{_allowed(db, name)}")
            return f"{exc} (allowed for {name}: {_allowed(db, name)})"
    return message


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyCount:
    """Routes a strategy would evaluate: ``low``..``high`` (equal when known exactly)."""

    strategy: str
    low: int | None
    high: int | None
    default: bool = False
    note: str = ""

    @property
    def text(self) -> str:
        if self.low is None:
            return self.note or "unknown"
        if self.high is None or self.high == self.low:
            return f"{self.low:,}"
        return f"{self.low:,}–{self.high:,}"


def strategy_counts(
    expr: Expression,
    *,
    max_candidates: int | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    names: Sequence[str] | None = None,
) -> list[StrategyCount]:
    """Routes each strategy would run on ``expr`` (its ``planned()``, capped by
    ``max_candidates``); ``mixed`` knows its phase 2 only after phase 1, so it gets a range."""
    from gptuner_core.expressions import mixed_phase2
    from gptuner_core.strategies import DEFAULT_STRATEGY
    from gptuner_core.strategies import get_strategy
    from gptuner_core.strategies import strategy_names

    # every strategy measures distinct routes: the space, plus the default route when the
    # expression leaves it out (a sampler's planned() counts the default apart, once too many)
    distinct = expr.count("full") + (0 if baseline_in_space(expr) else 1)

    def cap(n: int | None) -> int | None:
        if n is None:
            return None
        return min(n, distinct, max_candidates or distinct)

    out = []
    for name in names or strategy_names():
        opts = dict((options or {}).get(name, {}))
        is_default = name == DEFAULT_STRATEGY
        try:
            strategy = get_strategy(name, expr, **opts)
            planned = strategy.planned()
        except (GptunerError, ImportError, ValueError, TypeError) as exc:
            out.append(StrategyCount(strategy=name, low=None, high=None, default=is_default,
                                     note=f"unavailable: {exc}"))
            continue
        if planned is None and name.startswith("mixed"):
            fast = expr.count("fast")
            variable = [t.name for t in expr.variable_terms]
            high = fast + (mixed_phase2(expr, variable).count("full") if len(variable) > 1 else 0)
            out.append(StrategyCount(strategy=name, low=cap(fast), high=cap(high),
                                     default=is_default, note="phase 2 depends on phase 1"))
            continue
        out.append(StrategyCount(strategy=name, low=cap(planned), high=cap(planned),
                                 default=is_default, note="" if planned is not None else "unknown"))
    return out


def baseline_in_space(expr: Expression) -> bool:
    """Whether the default route (#0) is one of the expression's routes: every variable knob
    lists its default value (fixed knobs are part of the baseline as written)."""
    return all(d in t.values for t, d in zip(expr.terms, expr.defaults, strict=True)
               if t.variable)
