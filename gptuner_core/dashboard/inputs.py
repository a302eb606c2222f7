"""Typed text fields: what the user typed is what is checked and what is used (no streamlit).

Numbers are typed as text, so the value on screen is always the value the command uses: a bad
entry gives one clear line (what, expected, got) and no value, never a silently kept old one.
"""

from __future__ import annotations

import math
from typing import Any


REQUIRED = object()  # ``blank=`` value: an empty field is an error
LIMIT = 1e12  # larger entries are refused as typos


def _expected(kind: type, minimum: float | None, exclusive: bool, maximum: float | None) -> str:
    what = "a whole number" if kind is int else "a number"
    if minimum is not None:
        what += f" {'>' if exclusive else '≥'} {minimum:g}"
    if maximum is not None:
        what += f"{' and' if minimum is not None else ''} ≤ {maximum:g}"
    return what


def parse_number(
    text: Any,
    name: str,
    *,
    kind: type = float,
    minimum: float | None = None,
    exclusive_min: bool = False,
    maximum: float | None = None,
    blank: Any = REQUIRED,
) -> tuple[Any, str | None]:
    """``(value, None)`` or ``(None, message)``.

    ``blank`` is the value of an empty field (e.g. ``None`` for "no limit"); without it an empty
    field is an error. ``nan``, infinities and magnitudes above :data:`LIMIT` are refused.
    """
    raw = "" if text is None else str(text).strip()
    expected = _expected(kind, minimum, exclusive_min, maximum)
    if not raw:
        if blank is not REQUIRED:
            return blank, None
        return None, f"{name}: expected {expected} (got an empty field)"
    try:
        value = float(raw.replace("_", ""))
    except ValueError:
        return None, f"{name}: expected {expected} (got '{raw}')"
    if not math.isfinite(value):
        return None, f"{name}: expected {expected} (got '{raw}', which is not a finite number)"
    if abs(value) > LIMIT:
        return None, (f"{name}: expected {expected} (got '{raw}', larger than {LIMIT:g}, the "
                      "largest accepted: a typo?)")
    if kind is int:
        if value != int(value):
            return None, f"{name}: expected {expected} (got '{raw}')"
        value = int(value)
    if minimum is not None and (value <= minimum if exclusive_min else value < minimum):
        return None, f"{name}: expected {expected} (got '{raw}')"
    if maximum is not None and value > maximum:
        return None, f"{name}: expected {expected} (got '{raw}')"
    return value, None


def parse_text_list(text: Any) -> tuple[str, ...]:
    """Comma- or newline-separated entries, trimmed, empty ones dropped."""
    raw = "" if text is None else str(text)
    return tuple(p.strip() for p in raw.replace("\n", ",").split(",") if p.strip())
