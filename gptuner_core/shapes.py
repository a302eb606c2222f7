"""Per-input specs: batch axis, shapes (trtexec syntax) and value ranges for synthetic inputs.

Real models do not all take batch-first inputs. silero VAD takes ``input`` ``[B, 576]``, a
recurrent ``state`` ``[2, B, 128]`` whose batch is axis 1, and ``sr``, an int64 scalar. An
:class:`InputSpec` says, per model input, along which axis rows are counted (``batch_axis``;
``None`` = a *fixed* input, fed as given with every batch: scalars, constant state), and which
values synthetic inputs take (:class:`ValueRange`).

Default batch axes (:func:`input_specs`): rank-0 inputs are fixed; an input whose axis 0 is
dynamic is batched along axis 0; an input whose axis 0 is fixed is batched along the axis that
carries the batch symbol of the other inputs (``[2, 'batch', 128]``), or, when dims are unnamed
(``[2, ?, 128]``) and other inputs have a dynamic batch, along its only dynamic axis; otherwise
along axis 0 (a fixed batch: rows come in multiples of it).

Text forms, as on trtexec's command line (names may contain ``:``; the last one splits):

* shapes: ``x:1x3x224x224,mask:1x128``; a scalar is ``sr:`` or ``sr:scalar``
  (``--shapes``, ``--minShapes``, ``--optShapes``, ``--maxShapes``; :func:`parse_profile`).
* batch axes: ``state:1,sr:none`` (:func:`parse_batch_axes`).
* value ranges: ``input_ids:0..30522,sr:16000``: ``LOW..HIGH`` is half-open ``[LOW, HIGH)``
  (integers drawn from it, floats uniform in it), a single number is a constant
  (:func:`parse_value_ranges`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.batching import iter_batches
from gptuner_core.batching import rows_of
from gptuner_core.batching import stack_outputs
from gptuner_core.batching import take
from gptuner_core.errors import DatasetError


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.backends._base import TensorSpec

Dim = int | str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueRange:
    """Values of a synthetic input: ``[low, high)``, or the constant ``low`` when ``high`` is None."""

    low: float
    high: float | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.low) or (self.high is not None and not math.isfinite(self.high)):
            msg = f"value range bounds must be finite numbers (got {self.low!r}..{self.high!r})"
            raise DatasetError(msg)
        if self.high is not None and not self.high > self.low:
            msg = f"value range {self.low:g}..{self.high:g} is empty (expected LOW < HIGH)"
            raise DatasetError(msg)

    def text(self) -> str:
        return f"{self.low:g}" if self.high is None else f"[{self.low:g}, {self.high:g})"


@dataclass(frozen=True, slots=True, kw_only=True)
class ShapeSpec:
    """One input's optimization profile (trtexec ``--minShapes/--optShapes/--maxShapes``);
    ``--shapes`` sets all three to one shape. ``()`` is a scalar."""

    name: str
    min: tuple[int, ...]
    opt: tuple[int, ...]
    max: tuple[int, ...]

    @property
    def static(self) -> bool:
        return self.min == self.opt == self.max


@dataclass(frozen=True, slots=True, kw_only=True)
class InputSpec:
    """A model input as gptuner feeds it.

    Attributes:
        name, dtype, shape: as the model declares them (``None``/a name for dynamic dims).
        batch_axis: the axis rows are counted along, or ``None`` for a fixed input (fed whole
            with every batch).
        value_range: values of synthetic inputs (``None``: normal floats, ints in ``[0, 10)``).
        shape_override: the shape synthetic inputs take (batch axis = the rows) and that the
            study measures at, from ``--shapes``/``--optShapes``; ``None`` = the model's.
    """

    name: str
    dtype: str
    shape: tuple[Dim, ...]
    batch_axis: int | None = 0
    value_range: ValueRange | None = None
    shape_override: tuple[int, ...] | None = None


# -- text forms -----------------------------------------------------------------------------
def _items(text: str, what: str) -> Iterator[tuple[str, str]]:
    for item in (p.strip() for p in str(text).split(",")):
        if not item:
            continue
        name, sep, value = item.rpartition(":")
        name = name.strip().strip("'\"")
        if not sep or not name:
            msg = f"{what}: {item!r} is not NAME:VALUE (e.g. {_EXAMPLES[what]})"
            raise DatasetError(msg)
        yield name, value.strip()


_EXAMPLES = {
    "--shapes": "x:1x3x224x224,sr:scalar",
    "--minShapes": "x:1x3x32x32",
    "--optShapes": "x:8x3x224x224",
    "--maxShapes": "x:32x3x640x640",
    "--measure-shapes": "x:1x16 (repeat the option for each shape)",
    "batch axes": "state:1,sr:none",
    "value ranges": "input_ids:0..30522,sr:16000",
}


#: the largest dimension a shape option takes (TensorRT's int32 dimensions)
MAX_DIM = 2**31 - 1


def parse_shapes(text: str, *, option: str = "--shapes") -> dict[str, tuple[int, ...]]:
    """``"x:1x3x224x224,sr:"`` -> ``{"x": (1, 3, 224, 224), "sr": ()}`` (trtexec syntax)."""
    out: dict[str, tuple[int, ...]] = {}
    for name, value in _items(text, option if option in _EXAMPLES else "--shapes"):
        if name in out:
            msg = f"{option}: input '{name}' is given twice"
            raise DatasetError(msg)
        if value in ("", "scalar"):
            out[name] = ()
            continue
        try:
            dims = tuple(int(d) for d in value.lower().split("x"))
        except ValueError:
            dims = ()
        if not dims or any(d < 0 or d > MAX_DIM for d in dims):
            msg = (
                f"{option}: shape {value!r} of input '{name}' is not DIMxDIMx... with integers "
                f">= 0 and <= {MAX_DIM} (e.g. {_EXAMPLES.get(option, _EXAMPLES['--shapes'])}; a scalar is "
                f"'{name}:scalar')"
            )
            raise DatasetError(msg)
        out[name] = dims
    return out


def shape_label(shapes: Mapping[str, tuple[int, ...]]) -> str:
    """The canonical text of a shape profile: ``{"x": (8, 16)}`` -> ``"x:8x16"`` (a scalar is
    ``sr:scalar``); the name a measured shape is stored and shown under."""
    return ",".join(
        f"{name}:{'x'.join(str(d) for d in dims) if dims else 'scalar'}" for name, dims in shapes.items()
    )


def parse_profile(
    *,
    shapes: str | None = None,
    min_shapes: str | None = None,
    opt_shapes: str | None = None,
    max_shapes: str | None = None,
) -> dict[str, ShapeSpec]:
    """trtexec's shape options into one :class:`ShapeSpec` per named input.

    ``--shapes`` sets min = opt = max; otherwise ``--optShapes`` is needed for every input
    given a min or max shape, and a missing min or max equals opt (trtexec's rule). An input
    cannot be in ``--shapes`` and in a min/opt/max option, and min <= opt <= max per dim.
    """
    fixed = parse_shapes(shapes, option="--shapes") if shapes else {}
    parts = {
        opt: parse_shapes(text, option=opt) if text else {}
        for opt, text in (
            ("--minShapes", min_shapes), ("--optShapes", opt_shapes), ("--maxShapes", max_shapes)
        )
    }
    mins, opts, maxs = parts["--minShapes"], parts["--optShapes"], parts["--maxShapes"]
    profile = {n: ShapeSpec(name=n, min=s, opt=s, max=s) for n, s in fixed.items()}
    for name in dict.fromkeys([*mins, *opts, *maxs]):
        if name in fixed:
            msg = f"input '{name}' is in --shapes and in --minShapes/--optShapes/--maxShapes (use one)"
            raise DatasetError(msg)
        if name not in opts:
            msg = f"input '{name}' has a min or max shape but no --optShapes entry (expected all three or --shapes)"
            raise DatasetError(msg)
        opt = opts[name]
        lo, hi = mins.get(name, opt), maxs.get(name, opt)
        if not (len(lo) == len(opt) == len(hi)) or any(
            not a <= b <= c for a, b, c in zip(lo, opt, hi, strict=True)
        ):
            msg = (
                f"input '{name}': min {lo}, opt {opt}, max {hi} need the same rank and "
                "min <= opt <= max in every dimension"
            )
            raise DatasetError(msg)
        profile[name] = ShapeSpec(name=name, min=lo, opt=opt, max=hi)
    return profile


def parse_batch_axes(text: str) -> dict[str, int | None]:
    """``"state:1,sr:none"`` -> ``{"state": 1, "sr": None}`` (``none`` = a fixed input)."""
    out: dict[str, int | None] = {}
    for name, value in _items(text, "batch axes"):
        if value.lower() in ("none", "fixed", "-"):
            out[name] = None
            continue
        try:
            axis = int(value)
        except ValueError:
            axis = -1
        if axis < 0:
            msg = f"batch axis {value!r} of input '{name}' must be an axis >= 0 or 'none' (e.g. state:1,sr:none)"
            raise DatasetError(msg)
        out[name] = axis
    return out


def _number(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        msg = f"value range of input '{name}': {text!r} is not a number (e.g. input_ids:0..30522, sr:16000)"
        raise DatasetError(msg) from None
    return value


def parse_value_ranges(text: str) -> dict[str, ValueRange]:
    """``"input_ids:0..30522,sr:16000"`` -> ranges ``[0, 30522)`` and the constant 16000."""
    out: dict[str, ValueRange] = {}
    for name, value in _items(text, "value ranges"):
        low, sep, high = value.partition("..")
        if sep:
            out[name] = ValueRange(low=_number(low, name), high=_number(high, name))
        else:
            out[name] = ValueRange(low=_number(value, name))
    return out


# -- resolution -----------------------------------------------------------------------------
def default_batch_axes(specs: Sequence[TensorSpec]) -> dict[str, int | None]:
    """Each input's batch axis by the rule in the module docstring."""
    batch_symbols = {s.shape[0] for s in specs if s.shape and isinstance(s.shape[0], str)}
    dynamic_batch = any(s.shape and not isinstance(s.shape[0], int) for s in specs)
    axes: dict[str, int | None] = {}
    for spec in specs:
        shape = spec.shape
        if not shape:
            axes[spec.name] = None
        elif not isinstance(shape[0], int):
            axes[spec.name] = 0
        else:
            named = [k for k, d in enumerate(shape) if isinstance(d, str) and d in batch_symbols]
            anonymous = [k for k, d in enumerate(shape) if d is None]
            dynamic = [k for k, d in enumerate(shape) if not isinstance(d, int)]
            if named:
                axes[spec.name] = named[0]
            elif dynamic_batch and len(anonymous) == 1 and len(dynamic) == 1:
                axes[spec.name] = anonymous[0]
            else:
                axes[spec.name] = 0
    return axes


def _check_names(given: Mapping[str, Any], names: Sequence[str], what: str) -> None:
    unknown = [n for n in given if n not in names]
    if unknown:
        msg = f"{what} name(s) {unknown} that are not model inputs (model inputs: {list(names)})"
        raise DatasetError(msg)


def input_specs(
    specs: Sequence[TensorSpec | InputSpec],
    *,
    batch_axes: Mapping[str, int | None] | None = None,
    value_ranges: Mapping[str, ValueRange] | None = None,
    shapes: Mapping[str, tuple[int, ...] | ShapeSpec] | None = None,
) -> tuple[InputSpec, ...]:
    """Resolve the model's input specs (and the user's overrides) into :class:`InputSpec` s.

    Refuses override names that are not model inputs, a batch axis beyond an input's rank, and
    a shape whose rank or fixed dims do not fit the model (each with what was expected).
    """
    names = [s.name for s in specs]
    batch_axes = dict(batch_axes or {})
    value_ranges = dict(value_ranges or {})
    shapes = dict(shapes or {})
    _check_names(batch_axes, names, "batch axes given for")
    _check_names(value_ranges, names, "value ranges given for")
    _check_names(shapes, names, "shapes given for")
    plain = [s for s in specs if not isinstance(s, InputSpec)]
    defaults = default_batch_axes(plain) if plain else {}
    out = []
    for spec in specs:
        if isinstance(spec, InputSpec):
            axis, vr, override = spec.batch_axis, spec.value_range, spec.shape_override
        else:
            axis, vr, override = defaults[spec.name], None, None
        axis = batch_axes.get(spec.name, axis)
        if axis is not None and axis >= len(spec.shape):
            msg = (
                f"batch axis {axis} of input '{spec.name}' is beyond its rank {len(spec.shape)} "
                f"(shape {_fmt(spec.shape)}; expected an axis < {len(spec.shape)} or 'none')"
            )
            raise DatasetError(msg)
        shape = shapes.get(spec.name)
        if shape is not None:
            override = shape.opt if isinstance(shape, ShapeSpec) else tuple(shape)
            check_shape(spec.name, spec.shape, override, what="shape given")
        out.append(
            InputSpec(
                name=spec.name, dtype=spec.dtype, shape=tuple(spec.shape), batch_axis=axis,
                value_range=value_ranges.get(spec.name, vr), shape_override=override,
            )
        )
    return tuple(out)


def check_shape(name: str, model: Sequence[Dim], given: Sequence[int], *, what: str) -> None:
    """Refuse a concrete shape that does not fit the model's declared shape."""
    if len(given) != len(model):
        msg = f"{what} for input '{name}' is {tuple(given)} (rank {len(given)}), the model expects rank {len(model)} {_fmt(model)}"
        raise DatasetError(msg)
    for axis, (want, got) in enumerate(zip(model, given, strict=True)):
        if isinstance(want, int) and want != got:
            msg = f"{what} for input '{name}' is {tuple(given)}, the model expects {_fmt(model)} (axis {axis}: fixed at {want})"
            raise DatasetError(msg)


def _fmt(shape: Sequence[Dim]) -> str:
    dims = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


__all__ = [
    "InputSpec",
    "ShapeSpec",
    "ValueRange",
    "check_shape",
    "default_batch_axes",
    "input_specs",
    "iter_batches",
    "parse_batch_axes",
    "parse_profile",
    "parse_shapes",
    "parse_value_ranges",
    "rows_of",
    "shape_label",
    "stack_outputs",
    "take",
]
