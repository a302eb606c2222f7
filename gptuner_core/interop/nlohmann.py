"""JSON exactly as nlohmann's ``ordered_json::dump()`` writes it (trtexec's tuning cache lines).

Compact, insertion order, UTF-8 unescaped, doubles in shortest round-trip form with a ``.0`` on
integral values; non-finite doubles become ``null``. ``dumps(value, "python")`` writes Python's
``json.dumps`` style instead (Torch-TRT's caches).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any


STYLE_NLOHMANN = "nlohmann"
STYLE_PYTHON = "python"


def _exp(e: int) -> str:
    sign = "-" if e < 0 else "+"
    return f"{sign}{abs(e):02d}"


def format_double(x: float) -> str:
    """A double as nlohmann ``dump()`` writes it (shortest digits; NaN/inf become ``null``)."""
    if not math.isfinite(x):
        return "null"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digit_tuple, k = Decimal(repr(x)).as_tuple()
    assert isinstance(k, int)
    digits = "".join(map(str, digit_tuple))
    stripped = digits.rstrip("0")
    k += len(digits) - len(stripped)
    digits = stripped
    n = len(digits) + k
    prefix = "-" if sign else ""
    if k >= 0 and n <= 15:
        body = digits + "0" * k + ".0"
    elif 0 < n <= 15:
        body = digits[:n] + "." + digits[n:]
    elif -4 < n <= 0:
        body = "0." + "0" * (-n) + digits
    elif len(digits) == 1:
        body = digits + "e" + _exp(n - 1)
    else:
        body = digits[0] + "." + digits[1:] + "e" + _exp(n - 1)
    return prefix + body


def dump_nlohmann(value: Any) -> str:
    """Compact JSON exactly like ``nlohmann::ordered_json::dump()``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}:{dump_nlohmann(v)}"
            for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dump_nlohmann(v) for v in value) + "]"
    msg = f"cannot write {type(value).__name__} to a tuning cache"
    raise TypeError(msg)


def dumps(value: Any, style: str = STYLE_NLOHMANN) -> str:
    """One JSONL line (no newline) in ``style`` (``nlohmann`` or ``python``)."""
    if style == STYLE_PYTHON:
        return json.dumps(value)
    return dump_nlohmann(value)
