"""Parsing user JSON files in one place: a decode error and a document nested too deeply to
parse (``RecursionError`` in the stdlib parser) give the same one-line message shape."""

from __future__ import annotations

import json
from typing import Any

from gptuner_core.errors import GptunerError


def loads(text: str | bytes, what: str, error: type[GptunerError]) -> Any:
    """``json.loads`` that raises ``error`` naming ``what`` (e.g. "knob database 'k.json'")."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{what}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        raise error(msg) from None
    except RecursionError:
        msg = f"{what}: JSON nested too deeply to parse (expected a flat document of plain values)"
        raise error(msg) from None
