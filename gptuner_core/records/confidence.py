"""How a confidence level is written: ``95%``, ``99.5%``, ``99.75%``.

Re-validation intervals sit at per-look levels (alpha spending, Bonferroni over contenders) such
as 99.753 %; rounding that to a whole percent wrote "100% CI", a claim of certainty. The level is
floored to two decimals instead, so the text never claims more confidence than the interval has.
"""

from __future__ import annotations

import math


def percent(confidence: float) -> str:
    """``0.95 -> "95%"``, ``0.995 -> "99.5%"``, ``0.99753 -> "99.75%"``, ``0.9999999 -> "99.99%"``."""
    return f"{math.floor(confidence * 10_000 + 1e-6) / 100:g}%"
