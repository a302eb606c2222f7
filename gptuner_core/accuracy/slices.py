"""Slices of outputs in NumPy syntax (``output0[:, 4:, :]``): parsed without ``eval``, checked
against the model's output shapes, and the scale dominance of a packed output.

A selector is an output name, or an output name followed by ``[...]`` holding integers, ``a:b:c``
slices (each part an optional integer, the step not 0) and at most one ``...``, separated by
commas. Anything else (names, calls, floats, ``None``) is refused. Its canonical spelling
(:attr:`OutputSlice.text`, e.g. ``output0[:, 4:, :]``) is the key its loss is stored under.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

import numpy as np

from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.accuracy.losses import OutputLoss

#: one index: an int, a ``(start, stop, step)`` slice, or ``...``
Item = Any
_SELECTOR = re.compile(r"\s*([^\[\]]+?)\s*\[([^\[\]]*)\]\s*", re.S)
_INT = re.compile(r"[+-]?\d+")
_EXPECTED = "expected OUTPUT or OUTPUT[...] in NumPy syntax: integers, a:b:c slices and one '...', e.g. output0[:, 4:, :]"
#: a slice holding at least this share of an output's squared norm "dominates" it
DOMINANT_SHARE = 0.9
#: ... and is at least this many times louder (RMS per value) than the rest
LOUDER = 30.0


def split_selectors(text: str) -> list[str]:
    """``"boxes,output0[:, 4:, :],emb"`` -> the three selectors (commas inside ``[]`` kept)."""
    parts, depth, current = [], 0, ""
    for ch in text or "":
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _item_text(item: Item) -> str:
    if item is Ellipsis:
        return "..."
    if isinstance(item, int):
        return str(item)
    start, stop, step = item
    text = f"{'' if start is None else start}:{'' if stop is None else stop}"
    return text if step is None else f"{text}:{step}"


def _parse_item(raw: str, text: str) -> Item:
    raw = raw.strip()
    if raw == "...":
        return Ellipsis
    if _INT.fullmatch(raw):
        return int(raw)
    parts = [p.strip() for p in raw.split(":")]
    if len(parts) in (2, 3) and all(p == "" or _INT.fullmatch(p) for p in parts):
        start, stop, *rest = (int(p) if p else None for p in parts)
        step = rest[0] if rest else None
        if step == 0:
            msg = f"output slice {text!r}: the step of {raw!r} is 0 ({_EXPECTED})"
            raise ConfigError(msg)
        return (start, stop, step)
    msg = f"output slice {text!r}: {raw!r} is not an integer, a slice or '...' ({_EXPECTED})"
    raise ConfigError(msg)


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputSlice:
    """One gated selector: a whole output (``items is None``) or a slice of it."""

    output: str
    items: tuple[Item, ...] | None = None

    @classmethod
    def parse(cls, text: str) -> OutputSlice:
        if not isinstance(text, str) or not text.strip():
            msg = f"output slice {text!r}: empty ({_EXPECTED})"
            raise ConfigError(msg)
        if "[" not in text and "]" not in text:
            return cls(output=text.strip())
        m = _SELECTOR.fullmatch(text)
        if m is None:
            msg = f"output slice {text!r} does not parse ({_EXPECTED})"
            raise ConfigError(msg)
        items = tuple(_parse_item(raw, text) for raw in m.group(2).split(","))
        if sum(i is Ellipsis for i in items) > 1:
            msg = f"output slice {text!r} has more than one '...' ({_EXPECTED})"
            raise ConfigError(msg)
        return cls(output=m.group(1), items=items)

    @property
    def whole(self) -> bool:
        return self.items is None

    @property
    def text(self) -> str:
        if self.items is None:
            return self.output
        return f"{self.output}[{', '.join(_item_text(i) for i in self.items)}]"

    def _dims(self, ndim: int) -> list[tuple[int, Item]] | str:
        """``(dimension, item)`` of every non-ellipsis item, or why they do not fit ``ndim``."""
        items = self.items or ()
        n = sum(i is not Ellipsis for i in items)
        if n > ndim:
            return f"output slice '{self.text}' has {n} indices, output '{self.output}' has {ndim} dimensions"
        cut = items.index(Ellipsis) if Ellipsis in items else len(items)
        before, after = items[:cut], items[cut + 1:]
        return [*enumerate(before), *((ndim - len(after) + k, it) for k, it in enumerate(after))]

    def misfit(self, shape: Sequence[int | str | None]) -> str:
        """Why this slice cannot apply to an output of ``shape`` ("" if it can; dynamic dims
        (``None`` or a name) are taken to fit)."""
        if self.items is None:
            return ""
        dims = self._dims(len(shape))
        if isinstance(dims, str):
            return dims
        for d, item in dims:
            size = shape[d]
            if not isinstance(size, int):
                continue
            if isinstance(item, int):
                if not -size <= item < size:
                    return f"output slice '{self.text}': index {item} is out of range for dimension {d} (size {size})"
            elif not range(size)[slice(*item)]:
                return f"output slice '{self.text}' selects nothing of dimension {d} (size {size})"
        return ""

    def select(self, array: Any) -> np.ndarray:
        """The selected part of ``array`` (ConfigError when the slice does not fit it)."""
        arr = np.asarray(array)
        if self.items is None:
            return arr
        why = self.misfit(arr.shape)
        if why:
            raise ConfigError(why)
        return arr[tuple(i if i is Ellipsis or isinstance(i, int) else slice(*i) for i in self.items)]


def canonical(text: str) -> str:
    """The canonical spelling of a selector (ConfigError when it does not parse)."""
    return OutputSlice.parse(text).text


def slice_losses(
    outputs: Mapping[str, Any], golden: Mapping[str, Any], selectors: Sequence[str], metric: str,
    *, atol: float, rtol: float,
) -> dict[str, OutputLoss]:
    """The loss of every slice selector (whole outputs are compared by ``compare_outputs``)."""
    from gptuner_core.accuracy.losses import OutputLoss
    from gptuner_core.accuracy.losses import compare

    result: dict[str, OutputLoss] = {}
    for text in selectors:
        sel = OutputSlice.parse(text)
        if sel.whole or sel.output not in golden:
            continue
        if sel.output not in outputs:
            result[sel.text] = OutputLoss(math.inf, f"output '{sel.output}' missing (candidate outputs: {sorted(outputs)})")
            continue
        try:
            ref = sel.select(golden[sel.output])
            out = sel.select(outputs[sel.output])
        except ConfigError as exc:
            result[sel.text] = OutputLoss(math.inf, str(exc))
            continue
        result[sel.text] = compare(out, ref, metric, atol=atol, rtol=rtol, name=sel.text)
    return result


def _dominant_window(energy: np.ndarray) -> tuple[int, int, float] | None:
    """The shortest run ``[a, b)`` holding :data:`DOMINANT_SHARE` of ``energy`` and
    :data:`LOUDER` times louder (RMS per value) than the rest, else None. (A detector's box
    centres alone are about 10x louder than its sizes; boxes are 100x+ louder than scores.)"""
    total = float(energy.sum())
    n = energy.size
    if total <= 0 or n < 2:
        return None
    prefix = np.concatenate([[0.0], np.cumsum(energy)])
    for length in range(1, n):
        sums = prefix[length:] - prefix[:-length]
        a = int(np.argmax(sums))
        share = float(sums[a]) / total
        rest = total - float(sums[a])
        if share < DOMINANT_SHARE or rest <= 0:
            continue
        if math.sqrt(float(sums[a]) / length) >= LOUDER * math.sqrt(rest / (n - length)):
            return a, a + length, share
    return None


class GateView(Protocol):
    """What :func:`dominance_warnings` reads of the gate's settings (``accuracy.gate.AccuracySettings``
    is one; naming it here would make ``slices`` and ``gate`` one import circle)."""

    @property
    def metric(self) -> str: ...

    def gates(self, output: str) -> bool: ...

    def epsilon_for(self, output: str) -> float | None: ...


def dominance_warnings(golden: Mapping[str, Any], settings: GateView) -> list[str]:
    """A warning per gated whole output (of 2+ dims) of which one slice along a dimension holds
    most of the squared norm while the rest is much smaller (:func:`_dominant_window`): its loss (any
    metric over the whole output) then says little about the rest (a detector's pixel boxes
    beside its class scores). Names the dominant slice and the slice to gate instead."""
    warnings = []
    for name, value in golden.items():
        arr = np.asarray(value)
        if not settings.gates(name) or settings.epsilon_for(name) is None:
            continue
        if arr.dtype.kind not in "fiu" or arr.ndim < 2 or arr.size == 0 or not np.isfinite(arr).all():
            continue
        scale = float(np.abs(arr).max()) or 1.0
        sq = np.square(arr.astype(np.float64) / scale)
        for axis in range(1, arr.ndim):
            size = arr.shape[axis]
            if not 2 <= size <= 1024:
                continue
            found = _dominant_window(sq.sum(axis=tuple(d for d in range(arr.ndim) if d != axis)))
            if found is None:
                continue
            a, b, share = found
            pick = [":"] * arr.ndim
            pick[axis] = f"{a}:{b}"
            loud = f"{name}[{', '.join(pick)}]"
            rest = f"{b}:" if a == 0 else f":{a}" if b == size else ""
            hint = ""
            if rest:
                pick[axis] = rest
                quiet = f"{name}[{', '.join(pick)}]"
                hint = f"; gate them on their own, e.g. --gate-outputs '{quiet}' --epsilon '{quiet}=EPS'"
            warnings.append(
                f"warning: the {settings.metric} gate on output '{name}' is dominated by {loud}: it "
                f"holds {share:.1%} of the reference's squared norm (the rest {1 - share:.2g}), so the other values along "
                f"dimension {axis} barely move the loss{hint}"
            )
            break
    return warnings
