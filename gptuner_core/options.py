"""One option system for backends and strategies: declarations as data, one validator, one message.

A plug-in declares its options as ``name -> Option``; the same declaration drives validation,
``gptuner strategies`` / ``gptuner tune --help`` and the dashboard form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gptuner_core.errors import ConfigError
from gptuner_core.errors import GptunerError


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """One declared option. ``type`` coerces given values (``None``: taken as given);
    ``minimum``/``maximum`` bound a number (inclusive), which must also be finite."""

    description: str
    default: Any
    type: type | None = str
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "default": self.default,
            "type": self.type.__name__ if self.type is not None else "any",
            "choices": list(self.choices) if self.choices is not None else None,
            "minimum": self.minimum,
            "maximum": self.maximum,
        }

    def out_of_range(self, value: Any) -> str | None:
        """What a number must be when ``value`` is not (``None`` when it is fine)."""
        if self.type not in (int, float) or value is None:
            return None
        bounds = [f">= {b:g}" for b in (self.minimum,) if b is not None]
        bounds += [f"<= {b:g}" for b in (self.maximum,) if b is not None]
        expected = f"a finite {self.type.__name__}" + (f" {' and '.join(bounds)}" if bounds else "")
        ok = math.isfinite(value)
        ok = ok and (self.minimum is None or value >= self.minimum)
        ok = ok and (self.maximum is None or value <= self.maximum)
        return None if ok else expected


def _coerce(value: Any, kind: type) -> Any:
    if kind is bool and isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ValueError(value)
    if kind in (int, float) and isinstance(value, bool):
        raise ValueError(value)
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise ValueError(value)  # 1.5 is not an int (int() would cut it to 1)
    return kind(value)


def validate_options(
    kind: str,
    name: str,
    declared: dict[str, Option],
    given: dict[str, Any],
    *,
    error: type[GptunerError] = ConfigError,
) -> dict[str, Any]:
    """Fill defaults, coerce types, reject unknown names and values outside ``choices``.

    ``kind`` is ``"backend"`` or ``"strategy"``; messages name it, the option, what is allowed
    and what was given.
    """
    unknown = sorted(set(given) - set(declared))
    if unknown:
        msg = f"unknown option(s) {unknown} for {kind} '{name}' (allowed: {sorted(declared) or 'none'})"
        raise error(msg)
    out: dict[str, Any] = {}
    for key, opt in declared.items():
        value = given.get(key, opt.default)
        if value is not None and opt.type is not None and not isinstance(value, opt.type):
            try:
                value = _coerce(value, opt.type)
            except (TypeError, ValueError, OverflowError):
                msg = f"{kind} '{name}' option '{key}' must be {opt.type.__name__} (got {value!r})"
                raise error(msg) from None
        if opt.choices is not None and value not in opt.choices:
            msg = f"{kind} '{name}' option '{key}' must be one of {list(opt.choices)} (got {value!r})"
            raise error(msg)
        expected = opt.out_of_range(value)
        if expected is not None:
            msg = f"{kind} '{name}' option '{key}' must be {expected} (got {value!r})"
            raise error(msg)
        out[key] = value
    return out
