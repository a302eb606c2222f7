"""Knob-value features of ``bo``'s model: numeric knobs, and sizes that mix powers of two."""

from __future__ import annotations

from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Sequence


def _numeric(values: Sequence[str]) -> bool:
    """Are all the values numbers."""
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return True


def powers_of_two(values: Sequence[str]) -> tuple[float, ...] | None:
    """1.0 / 0.0 per value: is it a power of two; ``None`` unless the knob is a size (positive
    integers: with a 0 among them it is a level, a count or a switch) with more than two values
    that mixes at least two powers of two with other values (a block size 16, 32, 48 ... 256:
    GPU hardware favours 32, 64, 128, 256, a zig-zag over positions)."""
    if len(values) <= 2 or not all(v.isdigit() and int(v) > 0 for v in values):
        return None
    flags = tuple(float(n & (n - 1) == 0) for n in map(int, values))
    return flags if 2 <= sum(flags) < len(flags) else None

