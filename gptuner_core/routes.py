"""Fixed build routes: ``-name=value`` tokens separated by whitespace.

A route lists only the knobs it sets; unlisted knobs stay at their defaults. The canonical string
keeps the route's own order (trtexec prints routes in expression order). :meth:`Route.key` is the
order- and default-insensitive identity used to de-duplicate candidates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.errors import InvalidRouteError


if TYPE_CHECKING:
    from gptuner_core.knobs import KnobDatabase


@dataclass(frozen=True, slots=True)
class Route:
    """An ordered tuple of ``(name, value)`` pairs; names keep their leading dash."""

    assignments: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Route:
        """Parse ``"-a=x -b=y"``; raise :class:`InvalidRouteError` on a malformed token."""
        pairs: list[tuple[str, str]] = []
        seen: set[str] = set()
        for token in text.split():
            name, eq, value = token.partition("=")
            if not eq:
                msg = f"Invalid route token (no '='): {token} (expected -name=value)"
                raise InvalidRouteError(msg)
            if not name.startswith("-") or len(name) < 2:
                msg = f"Invalid route token (knob names start with '-'): {token}"
                raise InvalidRouteError(msg)
            if not value:
                msg = f"Invalid route token (empty value): {token}"
                raise InvalidRouteError(msg)
            if name in seen:
                msg = f"Knob set twice in route: {name}"
                raise InvalidRouteError(msg)
            seen.add(name)
            pairs.append((name, value))
        return cls(tuple(pairs))

    @classmethod
    def default(cls, db: KnobDatabase) -> Route:
        """All knobs at their defaults, in database order (trtexec's ``default_build_route``).
        A route knows the database, never the other way round (``KnobDatabase.default_route()``
        made ``knobs`` and ``routes`` one import circle)."""
        return cls(tuple((k.name, k.default) for k in db))

    @classmethod
    def from_dict(cls, values: dict[str, str]) -> Route:
        return cls(tuple((k, str(v)) for k, v in values.items()))

    def __str__(self) -> str:
        return " ".join(f"{n}={v}" for n, v in self.assignments)

    def __len__(self) -> int:
        return len(self.assignments)

    def as_dict(self) -> dict[str, str]:
        return dict(self.assignments)

    def get(self, name: str, default: str | None = None) -> str | None:
        for n, v in self.assignments:
            if n == name:
                return v
        return default

    def validate(self, db: KnobDatabase) -> None:
        """Check every name exists and every value is allowed (TRT's Python setter won't)."""
        for name, value in self.assignments:
            knob = db.get(name)
            if knob is None:
                msg = f"Unknown knob: {name}"
                raise InvalidRouteError(msg)
            if not knob.allows(value):
                allowed = "|".join(knob.values or ())
                msg = f"Invalid value for knob: {name}={value} (allowed: [{allowed}])"
                raise InvalidRouteError(msg)

    def resolved(self, db: KnobDatabase) -> dict[str, str]:
        """Every knob of ``db`` with this route's value or the default, in database order."""
        own = self.as_dict()
        return {k.name: own.get(k.name, k.default) for k in db}

    def key(self, db: KnobDatabase | None = None) -> str:
        """Identity for de-duplication: sorted tokens, dropping values equal to the default."""
        pairs = self.assignments
        if db is not None:
            pairs = tuple(
                (n, v) for n, v in pairs if (k := db.get(n)) is None or k.default != v
            )
        return " ".join(f"{n}={v}" for n, v in sorted(pairs))

    def diff(self, other: Route, db: KnobDatabase | None = None) -> dict[str, tuple[str, str]]:
        """Knobs whose value differs: ``{name: (self_value, other_value)}``."""
        a = self.resolved(db) if db is not None else self.as_dict()
        b = other.resolved(db) if db is not None else other.as_dict()
        out = {}
        for name in list(a) + [n for n in b if n not in a]:
            va, vb = a.get(name, ""), b.get(name, "")
            if va != vb:
                out[name] = (va, vb)
        return out
