"""trtexec tunable expressions: grammar, exact messages, ``fast``/``full`` expansion.

Grammar (``shared/reference/tensorrt-gpt.md`` §2.2, trtexec 11.1 ``sampleTuning.cpp``)::

    -knob=[v1|v2|v3]   variable: the loop tries the listed values
    -knob=value        fixed: pinned in every route

Tokens are split on the ``' '`` character outside brackets only (a tab is not a separator);
values inside brackets are trimmed of spaces and tabs around ``|``. The file form
(``--tuneBuildRouteFile``) joins the file's lines with one space.

Expansion (§2.3):

* ``fast`` (and phase 1 of ``mixed``): index 0 is the baseline (variable knobs at their database
  default, even when the default is not listed; fixed knobs at their value), then one-off variants,
  knobs taken right to left (last knob first), values in listed order, the default skipped.
* ``full``: the Cartesian product, last knob varying fastest (``itertools.product`` order).

Counts are exact Python ints computed without enumerating; :meth:`Expression.iter_routes` is a
lazy generator and :meth:`Expression.route_at` gives random access, so a 200-knob ``full`` space
is never materialised.

Example:
    >>> expr = Expression.parse("-opt1=[on|off] -opt2=[0|1|2]", db)
    >>> expr.count("fast"), expr.count("full")
    (4, 6)
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.errors import ExpressionError
from gptuner_core.expression_grammar import _TRIM
from gptuner_core.expression_grammar import SEARCHES
from gptuner_core.expression_grammar import Term
from gptuner_core.expression_grammar import check_search
from gptuner_core.expression_grammar import parse_term
from gptuner_core.expression_grammar import split_values
from gptuner_core.expression_grammar import tokenize
from gptuner_core.routes import Route


if TYPE_CHECKING:
    from collections.abc import Iterable
    from collections.abc import Iterator
    from collections.abc import Sequence

    from gptuner_core.knobs import KnobDatabase


class Expression:
    """A parsed tunable expression bound to the database defaults of its knobs.

    Build with :meth:`parse` or :meth:`from_file`. ``defaults[i]`` is the database default of
    ``terms[i]`` (the fast baseline value of a variable knob).
    """

    __slots__ = ("_baseline", "_defaults", "_names", "_terms", "_variant_list")

    def __init__(self, terms: Sequence[Term], defaults: Sequence[str]) -> None:
        if len(terms) != len(defaults):
            msg = f"Expression: {len(terms)} terms but {len(defaults)} defaults"
            raise ValueError(msg)
        names = [t.name for t in terms]
        dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if dup is not None:
            msg = f"Knob listed more than once in expression: {dup} (expected each knob once)"
            raise ExpressionError(msg)
        for t in terms:
            if not t.values:
                msg = f"Empty value list in expression: {t.name}=[]"
                raise ExpressionError(msg)
        self._terms = tuple(terms)
        self._defaults = tuple(defaults)
        self._names = tuple(t.name for t in self._terms)
        self._baseline = tuple(
            d if t.variable else t.values[0]
            for t, d in zip(self._terms, self._defaults, strict=True)
        )
        self._variant_list = self._compute_variants()

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, db: KnobDatabase) -> Expression:
        """Parse ``text`` against ``db``; raise :class:`ExpressionError` with trtexec's message.

        Unlike trtexec, a knob named twice is refused (the route would set it twice).
        """
        if not isinstance(text, str):
            msg = f"Expression must be a string (got {type(text).__name__})"
            raise ExpressionError(msg)
        if not text:
            msg = "Empty input"
            raise ExpressionError(msg)
        tokens = tokenize(text)
        if not tokens:
            msg = "No expressions found"
            raise ExpressionError(msg)
        terms = [parse_term(tok, db) for tok in tokens]
        return cls(terms, [db[t.name].default for t in terms])

    @classmethod
    def from_file(cls, path: str | Path, db: KnobDatabase) -> Expression:
        """Read ``--tuneBuildRouteFile`` content: lines joined with one space, then :meth:`parse`."""
        return cls.parse(read_expression_file(path), db)

    # -- views -----------------------------------------------------------------------------
    @property
    def terms(self) -> tuple[Term, ...]:
        return self._terms

    @property
    def defaults(self) -> tuple[str, ...]:
        """Database default of each term's knob, parallel to :attr:`terms`."""
        return self._defaults

    @property
    def variable_terms(self) -> tuple[Term, ...]:
        """Terms in bracket form (``-k=[...]``), the ones the search varies."""
        return tuple(t for t in self._terms if t.variable)

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def baseline_values(self) -> tuple[str, ...]:
        """Per term: the fixed value, or the database default for a variable knob."""
        return self._baseline

    def baseline(self) -> Route:
        """Route at fast index 0."""
        return self._route(self.baseline_values())

    def _route(self, values: Iterable[str]) -> Route:
        return Route(tuple(zip(self.names, values, strict=True)))

    # -- counting --------------------------------------------------------------------------
    def _variants(self) -> list[tuple[int, tuple[str, ...]]]:
        return self._variant_list

    def _compute_variants(self) -> list[tuple[int, tuple[str, ...]]]:
        """Per variable term (right to left): its index and its non-default values."""
        out = []
        for i in range(len(self._terms) - 1, -1, -1):
            t = self._terms[i]
            if t.variable:
                vals = tuple(v for v in t.values if v != self._defaults[i])
                if vals:
                    out.append((i, vals))
        return out

    def count(self, search: str = "fast") -> int:
        """Number of routes (``mixed``: phase 1 only, as trtexec reports it). Exact int."""
        check_search(search)
        if not self._terms:
            return 0
        if search == "full":
            return math.prod(len(t.values) for t in self._terms)
        return 1 + sum(len(vals) for _, vals in self._variants())

    # -- expansion -------------------------------------------------------------------------
    def iter_routes(self, search: str = "fast") -> Iterator[Route]:
        """Lazily yield routes in trtexec order (``mixed``: phase 1 = ``fast``)."""
        check_search(search)
        if not self._terms:
            return
        if search == "full":
            for combo in itertools.product(*(t.values for t in self._terms)):
                yield self._route(combo)
            return
        base = list(self.baseline_values())
        yield self._route(base)
        for i, vals in self._variants():
            for v in vals:
                row = list(base)
                row[i] = v
                yield self._route(row)

    def varied_at(self, index: int) -> tuple[str, str] | None:
        """For fast/mixed index ``index``: ``(knob, value)`` it varies, ``None`` for the baseline.

        trtexec's ``identifyVariedKnob``; mixed search uses it to find "positive" knobs.
        """
        self._check_index("fast", index)
        if index == 0:
            return None
        remaining = index - 1
        for i, vals in self._variants():
            if remaining < len(vals):
                return self._terms[i].name, vals[remaining]
            remaining -= len(vals)
        raise AssertionError("unreachable: index checked against count")

    def route_at(self, search: str, index: int) -> Route:
        """The ``index``-th route of ``iter_routes(search)`` without iterating (mixed radix)."""
        check_search(search)
        self._check_index(search, index)
        if search == "full":
            values: list[str] = [""] * len(self._terms)
            rest = index
            for j in range(len(self._terms) - 1, -1, -1):
                vals = self._terms[j].values
                rest, r = divmod(rest, len(vals))
                values[j] = vals[r]
            return self._route(values)
        base = list(self.baseline_values())
        varied = self.varied_at(index)
        if varied is not None:
            base[self.names.index(varied[0])] = varied[1]
        return self._route(base)

    def _check_index(self, search: str, index: int) -> None:
        if isinstance(index, bool) or not isinstance(index, int):
            msg = f"route index must be an int (got {type(index).__name__})"
            raise TypeError(msg)
        total = self.count(search)
        if not 0 <= index < total:
            msg = f"Index {index} is out of range [0, {total})"
            raise IndexError(msg)

    # -- text ------------------------------------------------------------------------------
    def __str__(self) -> str:
        return " ".join(str(t) for t in self._terms)

    def __repr__(self) -> str:
        return f"Expression({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Expression)
            and self._terms == other._terms
            and self._defaults == other._defaults
        )

    def __hash__(self) -> int:
        return hash((self._terms, self._defaults))


def mixed_phase2(expr: Expression, positive_knobs: Iterable[str]) -> Expression:
    """Phase 2 of ``mixed``: expand it with ``full``.

    Positive variable knobs keep all their listed values; every other knob is pinned (fixed) to
    its baseline value (trtexec's ``buildMixedPhase2Context``). trtexec runs phase 2 only when
    more than one knob is positive; that decision belongs to the caller. Phase 2 is not
    de-duplicated against phase 1 (its all-baseline route repeats phase-1 iteration 0).
    """
    positive = set(positive_knobs)
    unknown = sorted(positive - set(expr.names))
    if unknown:
        msg = (
            f"mixed phase 2: positive knob(s) not in the expression: {', '.join(unknown)} "
            f"(expression knobs: {' '.join(expr.names)})"
        )
        raise ExpressionError(msg)
    terms = []
    for t, base in zip(expr.terms, expr.baseline_values(), strict=True):
        if t.variable and t.name in positive:
            terms.append(t)
        else:
            terms.append(Term(t.name, (base,), False))
    return Expression(terms, expr.defaults)


def dry_run_lines(
    expr: Expression, search: str = "fast", limit: int | None = None
) -> Iterator[str]:
    """``[i]:<route>`` lines as ``trtexec --dryRun`` prints them (at most ``limit``)."""
    routes = expr.iter_routes(search)
    if limit is not None:
        routes = itertools.islice(routes, limit)
    for i, route in enumerate(routes):
        yield f"[{i}]:{route}"


# -- expression files (--tuneBuildRouteFile) -----------------------------------------------
def _strip_comment(line: str) -> str | None:
    """``line`` without a ``#`` comment (at the line start or after a space, outside brackets);
    ``None`` for a comment-only line; ``""`` for a line of spaces and tabs."""
    if not line.strip(_TRIM):
        return ""
    depth = 0
    for i, c in enumerate(line):
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "#" and depth <= 0 and (i == 0 or line[i - 1] in _TRIM):
            kept = line[:i].rstrip(_TRIM)
            return kept if kept else None
    return line


def expression_file_text(text: str) -> str:
    """``--tuneBuildRouteFile`` content as one expression: lines joined with one space.

    trtexec 11.1 joins the lines verbatim, so blank lines are harmless there (the tokenizer skips
    empty tokens; a line holding only a tab is not) and a ``#`` line is not (``Invalid expression (no '='): #``). gptuner also skips
    ``#`` comments, on their own line or after a space outside brackets; files it writes carry
    none, so they stay valid for trtexec; whitespace-only lines count as blank. ``\r`` line ends are tolerated.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    kept = (_strip_comment(line.removesuffix("\r")) for line in lines)
    return " ".join(line for line in kept if line is not None)


def read_expression_file(path: str | Path) -> str:
    """File content as one expression (:func:`expression_file_text`)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"expression file '{p}': cannot read file ({exc.strerror or exc})"
        raise ExpressionError(msg) from None
    except UnicodeDecodeError:
        msg = f"expression file '{p}': expected UTF-8 text (got binary data)"
        raise ExpressionError(msg) from None
    return expression_file_text(text)


def write_expression_file(path: str | Path, expr_or_text: Expression | str) -> None:
    """Write one token per line (the README's layout); reading it back gives the same tokens."""
    tokens = (
        [str(t) for t in expr_or_text.terms]
        if isinstance(expr_or_text, Expression)
        else tokenize(expr_or_text)
    )
    p = Path(path)
    try:
        p.write_text("".join(f"{t}\n" for t in tokens), encoding="utf-8")
    except OSError as exc:
        msg = f"expression file '{p}': cannot write file ({exc.strerror or exc})"
        raise ExpressionError(msg) from None


__all__ = ["SEARCHES", "Expression", "Term", "check_search", "dry_run_lines", "mixed_phase2",
           "parse_term", "read_expression_file", "split_values", "tokenize", "write_expression_file"]
