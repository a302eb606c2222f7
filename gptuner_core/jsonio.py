"""Parsing user JSON files in one place: a decode error, a document nested too deeply to parse
(``RecursionError`` in the stdlib parser) and an integer past the stdlib's 4,300 digits (its own
``ValueError``) give the same one-line message shape."""

from __future__ import annotations

import json
from typing import Any

from gptuner_core.errors import GptunerError


#: digits of the longest integer a file may hold: the stdlib refuses to parse longer ones (a
#: ``ValueError`` that is no JSON error); shorter ones a float cannot hold (over 309 digits) are
#: refused by the field that reads them, which can name it
MAX_INT_DIGITS = 4300


class IntegerTooLong(ValueError):
    """An integer in a JSON text longer than :data:`MAX_INT_DIGITS` (``str(exc)``: what it was)."""


def _int(text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        msg = f"an integer of {digits} digits (expected a number: at most {MAX_INT_DIGITS} digits)"
        raise IntegerTooLong(msg)
    return int(text)


def decode(text: str | bytes) -> Any:
    """``json.loads`` refusing integers longer than :data:`MAX_INT_DIGITS` (:class:`IntegerTooLong`);
    other errors as ``json.loads`` raises them."""
    return json.loads(text, parse_int=_int)


def loads(text: str | bytes, what: str, error: type[GptunerError]) -> Any:
    """``json.loads`` that raises ``error`` naming ``what`` (e.g. "knob database 'k.json'")."""
    try:
        return decode(text)
    except IntegerTooLong as exc:
        msg = f"{what}: {exc}"
        raise error(msg) from None
    except json.JSONDecodeError as exc:
        msg = f"{what}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        raise error(msg) from None
    except RecursionError:
        msg = f"{what}: JSON nested too deeply to parse (expected a flat document of plain values)"
        raise error(msg) from None
