"""``full``: the Cartesian product in trtexec order (last knob varies fastest)."""

from __future__ import annotations

from gptuner_core.strategies.fast import EnumerationStrategy


class FullStrategy(EnumerationStrategy):
    name = "full"
    summary = (
        "Exhaustive: every combination of the listed values (trtexec's 'full', last knob "
        "varying fastest). Exponential; use for small expressions."
    )
    options = {}
    search = "full"
