"""Study inputs: a dataset ``.npz`` validated against the model, or synthesized inputs.

Dataset files are ``.npz`` archives (``numpy.savez``) with one array per model input, named like
the input. Rows are counted along each input's *batch axis* (:mod:`gptuner_core.shapes`: axis 0
for ordinary batch-first inputs, axis 1 for a recurrent state ``[2, B, 128]``), and every batched
input needs the same number of rows. A *fixed* input (no batch axis: scalars such as silero's
``sr``) is stored as the model takes it and fed whole with every batch. The other axes must match
the model's fixed dimensions. An optional ``labels`` array (one entry per row: integer class ids,
or one-hot rows) feeds task metrics such as top-1. If the model itself has an input named
``labels``, that array is the input and the dataset has no labels.

Files are read with ``allow_pickle=False`` (objects refused, never unpickled); arrays are cast to
the model's dtype only when that keeps their meaning (:mod:`gptuner_core.dtypes`).

Synthetic inputs (:func:`synthesize`) serve models without a dataset: per input, values from its
:class:`~gptuner_core.shapes.ValueRange` when given (token ids within the vocabulary, a sample
rate constant), else random normal floats, ints in ``[0, int_high)`` (default 10), random bools.
Shapes come from the input's shape override (``--shapes``), else the model's fixed dims, with
dynamic dims from ``dims`` (symbolic name -> size) or :data:`DEFAULT_DYNAMIC_DIM` (16); the batch
axis holds the ``n`` rows. **Accuracy on synthetic inputs only measures agreement between the
golden (default-route) outputs and each candidate's outputs, not task accuracy**;
:meth:`Dataset.describe` says so in words for messages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from gptuner_core.batching import iter_batches
from gptuner_core.batching import take
from gptuner_core.dtypes import cast
from gptuner_core.dtypes import numpy_dtype
from gptuner_core.errors import DatasetError
from gptuner_core.npz import read_npz
from gptuner_core.shapes import InputSpec
from gptuner_core.shapes import input_specs


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.backends._base import TensorSpec


LABELS_KEY = "labels"
DEFAULT_DYNAMIC_DIM = 16
DEFAULT_INT_HIGH = 10


def _check_count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        msg = f"{what} must be an int >= 1 (got {value!r})"
        raise DatasetError(msg)
    return int(value)


# -- the dataset ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """Validated model inputs, optional labels, and where they came from.

    Attributes:
        inputs: model input name -> array in the model's dtype; batched inputs hold ``n_rows``
            along their batch axis, fixed inputs are as the model takes them.
        labels: one entry per row, or ``None``.
        n_rows: rows in every batched input.
        source: the file path, or ``"synthetic(n=64, seed=0)"``.
        synthetic: True for :func:`synthesize` (accuracy = golden-vs-candidate agreement only).
        batch_axes: input name -> batch axis (``None`` = fixed); inputs not listed use axis 0.
    """

    inputs: dict[str, np.ndarray]
    labels: np.ndarray | None
    n_rows: int
    source: str
    synthetic: bool = False
    batch_axes: dict[str, int | None] = field(default_factory=dict)

    def batches(self, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """Feeds of ``batch_size`` rows in order (views, no copies); the last may be smaller."""
        bs = _check_count(batch_size, "batch size")
        return iter_batches(self.inputs, bs, self.batch_axes)

    def check_batch_size(self, batch_size: int) -> int:
        """Refuse a batch size larger than the dataset, with both sizes."""
        bs = _check_count(batch_size, "batch size")
        if bs > self.n_rows:
            msg = (
                f"batch size {bs} is larger than dataset '{self.source}' ({self.n_rows} rows): "
                f"latency would be measured on {self.n_rows} rows, not {bs} (use --batch-size "
                f"{self.n_rows} or less, or a dataset with at least {bs} rows)"
            )
            raise DatasetError(msg)
        return bs

    def head(self, batch_size: int) -> dict[str, np.ndarray]:
        """The first ``batch_size`` rows: the feed used for latency measurement."""
        bs = self.check_batch_size(batch_size)
        return take(self.inputs, self.batch_axes, slice(0, bs))

    def calibration(self, n: int) -> dict[str, np.ndarray]:
        """Up to ``n`` rows for calibration, evenly spread over the dataset (deterministic), so
        a dataset sorted by class still yields a representative sample."""
        rows = _check_count(n, "calibration rows")
        if rows >= self.n_rows:
            return dict(self.inputs)
        index = np.linspace(0, self.n_rows - 1, num=rows).round().astype(np.int64)
        picked = take(self.inputs, self.batch_axes, index)
        return {name: np.ascontiguousarray(arr).reshape(arr.shape) for name, arr in picked.items()}

    def describe(self) -> str:
        """One line saying what the inputs are (for messages: say when they are synthetic)."""
        parts = []
        for name, arr in self.inputs.items():
            axis = self.batch_axes.get(name, 0)
            text = f"{name} {arr.dtype} {tuple(arr.shape)}"
            if axis is None and arr.size == 1:
                text += f" = {arr.reshape(-1)[0].item()!r}"
            elif axis not in (0, None):
                text += f" (batch axis {axis})"
            elif arr.dtype.kind in "iu" and arr.size:
                text += f" ints in [{arr.min()}, {arr.max()}]"
            parts.append(text)
        what = f"dataset '{self.source}' ({self.n_rows} rows)"
        if self.synthetic:
            what = (f"synthetic inputs ({self.source}; no dataset, so accuracy is agreement with "
                    "the default route only, and random values may be invalid for the model: "
                    "give a dataset, or shapes and value ranges)")
        return f"{what}: " + "; ".join(parts)


# -- validation ----------------------------------------------------------------------------
def _fmt_shape(shape: Sequence[int | str | None]) -> str:
    dims = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _check_array(
    arr: np.ndarray, spec: InputSpec, what: str, symbols: dict[str, tuple[int, str]], where: str
) -> None:
    if arr.ndim != len(spec.shape):
        msg = (
            f"{what} has shape {arr.shape} (rank {arr.ndim}), expected rank "
            f"{len(spec.shape)} {_fmt_shape(spec.shape)}"
        )
        raise DatasetError(msg)
    for axis, (want, got) in enumerate(zip(spec.shape, arr.shape, strict=True)):
        if axis == spec.batch_axis:
            if isinstance(want, int) and want and got % want:
                first = "first " if axis == 0 else ""
                msg = (
                    f"{what} has {got} row(s) along axis {axis}; the model's {first}dimension "
                    f"{'' if axis == 0 else f'{axis} '}is fixed at {want}, so rows must come in "
                    f"multiples of {want}"
                )
                raise DatasetError(msg)
        elif isinstance(want, int) and want != got:
            msg = (
                f"{what} has shape {arr.shape}, expected {_fmt_shape(spec.shape)} "
                f"(axis {axis}: expected {want}, found {got})"
            )
            raise DatasetError(msg)
        elif isinstance(want, str):
            seen = symbols.setdefault(want, (got, spec.name))
            if seen[0] != got:
                msg = (
                    f"{where}: dimension '{want}' is {seen[0]} in input '{seen[1]}' but "
                    f"{got} in input '{spec.name}' (axis {axis})"
                )
                raise DatasetError(msg)


def from_arrays(
    arrays: Mapping[str, Any],
    specs: Sequence[TensorSpec | InputSpec],
    *,
    labels: Any = None,
    source: str = "<arrays>",
    synthetic: bool = False,
) -> Dataset:
    """Validate named arrays against the model's inputs into a :class:`Dataset`.

    ``specs`` are the backend's :class:`TensorSpec` s (default batch axes) or resolved
    :class:`~gptuner_core.shapes.InputSpec` s. Raises DatasetError naming ``source``, the input,
    and what was expected vs found: missing or extra names, wrong rank, a fixed dimension that
    differs, inconsistent row counts or symbolic dimensions, a dtype that cannot be cast.
    """
    where = f"dataset '{source}'"
    expected = [s.name for s in specs]
    missing = [n for n in expected if n not in arrays]
    extra = sorted(set(arrays) - set(expected))
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing input(s) {missing}")
        if extra:
            parts.append(f"unexpected array(s) {extra}")
        msg = (
            f"{where}: {' and '.join(parts)} (model inputs: {expected}; found arrays: "
            f"{sorted(arrays)}; an optional '{LABELS_KEY}' array holds labels)"
        )
        raise DatasetError(msg)
    if not specs:
        msg = f"{where}: the model has no inputs to feed"
        raise DatasetError(msg)
    resolved = input_specs(specs)
    inputs: dict[str, np.ndarray] = {}
    n_rows: int | None = None
    rows_from = ("", 0)
    symbols: dict[str, tuple[int, str]] = {}
    for spec in resolved:
        arr = np.asarray(arrays[spec.name])
        what = f"{where}: input '{spec.name}'"
        _check_array(arr, spec, what, symbols, where)
        if spec.batch_axis is not None:
            rows = int(arr.shape[spec.batch_axis])
            if n_rows is None:
                n_rows, rows_from = rows, (spec.name, spec.batch_axis)
            elif rows != n_rows:
                msg = (
                    f"{where}: input '{spec.name}' has {rows} row(s) along axis "
                    f"{spec.batch_axis}, input '{rows_from[0]}' has {n_rows} (every batched "
                    "input needs the same rows along its batch axis)"
                )
                raise DatasetError(msg)
        inputs[spec.name] = cast(arr, numpy_dtype(spec.dtype), what)
    if n_rows is None:  # only fixed inputs: one row, fed as given
        n_rows = 1
    if n_rows == 0:
        msg = f"{where}: the arrays have 0 rows (expected at least 1)"
        raise DatasetError(msg)
    lab = None
    if labels is not None:
        lab = np.asarray(labels)
        if lab.dtype.kind not in "biuf":
            msg = f"{where}: '{LABELS_KEY}' has dtype {lab.dtype} (expected integer class ids)"
            raise DatasetError(msg)
        if lab.ndim == 0 or lab.shape[0] != n_rows:
            msg = (
                f"{where}: '{LABELS_KEY}' has shape {lab.shape}, expected one entry per row "
                f"({n_rows} rows along axis 0)"
            )
            raise DatasetError(msg)
        lab = np.ascontiguousarray(lab)
    return Dataset(
        inputs=inputs, labels=lab, n_rows=n_rows, source=source, synthetic=synthetic,
        batch_axes={s.name: s.batch_axis for s in resolved},
    )


def validate_batch_size(
    specs: Sequence[TensorSpec | InputSpec], batch_size: int, *, dataset: Dataset | None = None
) -> None:
    """Refuse a batch size that an input with a fixed batch dimension cannot take, or (with
    ``dataset``) one larger than the dataset's rows."""
    for spec in input_specs(specs):
        axis = spec.batch_axis
        want = None if axis is None else spec.shape[axis]
        if isinstance(want, int) and want > 0 and want != batch_size:
            where = "first dimension" if axis == 0 else f"batch dimension (axis {axis})"
            msg = (
                f"batch size {batch_size} does not fit model input '{spec.name}', whose {where} "
                f"is fixed at {want} (use --batch-size {want})"
            )
            raise DatasetError(msg)
    if dataset is not None:
        dataset.check_batch_size(batch_size)


# -- loading -------------------------------------------------------------------------------
def load_dataset(path: str | os.PathLike[str], specs: Sequence[TensorSpec | InputSpec]) -> Dataset:
    """Load and validate a dataset ``.npz`` (see the module docstring for the format)."""
    p = Path(path)
    if not p.is_file():
        msg = f"dataset file '{p}' not found" if not p.exists() else f"dataset '{p}' is not a file"
        raise DatasetError(msg)
    arrays = read_npz(p)
    spec_names = {s.name for s in specs}
    labels = None
    if LABELS_KEY in arrays and LABELS_KEY not in spec_names:
        labels = arrays.pop(LABELS_KEY)
    return from_arrays(arrays, specs, labels=labels, source=str(p))


# -- synthesis -----------------------------------------------------------------------------
def _values(spec: InputSpec, dtype: np.dtype, shape: list[int], rng: np.random.Generator, int_high: int) -> np.ndarray:
    vr = spec.value_range
    if vr is not None and vr.high is None:
        value = np.full(shape, vr.low)
        return cast(value, dtype, f"constant value of input '{spec.name}'")
    if dtype.kind == "f":
        if vr is not None:
            return rng.uniform(vr.low, vr.high, size=shape).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    info = np.iinfo(dtype)
    if vr is not None:
        low, high = int(np.ceil(vr.low)), int(np.ceil(vr.high))
        if low < info.min or high - 1 > info.max or high <= low:
            msg = (
                f"value range {vr.text()} of input '{spec.name}' holds no {dtype} integer "
                f"(expected integers within [{info.min}, {info.max}])"
            )
            raise DatasetError(msg)
        return rng.integers(low, high, size=shape).astype(dtype)
    high = min(int_high, int(info.max) + 1)
    return rng.integers(0, high, size=shape).astype(dtype)


def synthesize(
    specs: Sequence[TensorSpec | InputSpec],
    n: int,
    seed: int = 0,
    *,
    dims: Mapping[str, int] | None = None,
    int_high: int = DEFAULT_INT_HIGH,
) -> Dataset:
    """Random inputs for a model without a dataset (see the module docstring).

    The batch axis holds ``n`` rows (rounded up to a multiple of a fixed batch dimension);
    other dims come from the input's shape override, its fixed dims, ``dims`` by symbolic name,
    else :data:`DEFAULT_DYNAMIC_DIM`. Fixed inputs take their override or model shape whole.
    """
    rows = _check_count(n, "synthetic rows")
    dims = dict(dims or {})
    for name, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            msg = f"dynamic dimension '{name}' must be an int >= 1 (got {size!r})"
            raise DatasetError(msg)
    resolved = input_specs(specs)
    for spec in resolved:
        axis = spec.batch_axis
        if axis is not None and isinstance(spec.shape[axis], int) and spec.shape[axis] > 0:
            b = spec.shape[axis]
            rows = -(-rows // b) * b
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for spec in resolved:
        dtype = numpy_dtype(spec.dtype)
        if dtype is None:
            msg = f"cannot synthesize model input '{spec.name}' of dtype '{spec.dtype}' (expected a numeric or bool dtype)"
            raise DatasetError(msg)
        shape = []
        for axis, d in enumerate(spec.shape):
            if axis == spec.batch_axis:
                shape.append(rows)
            elif spec.shape_override is not None:
                shape.append(spec.shape_override[axis])
            elif isinstance(d, int) and d > 0:
                shape.append(d)
            elif isinstance(d, str) and d in dims:
                shape.append(dims[d])
            else:
                shape.append(DEFAULT_DYNAMIC_DIM)
        arrays[spec.name] = _values(spec, dtype, shape, rng, int_high)
    source = f"synthetic(n={rows}, seed={seed})"
    return from_arrays(arrays, resolved, source=source, synthetic=True)


def feed_at_shapes(
    specs: Sequence[TensorSpec | InputSpec],
    shapes: Mapping[str, tuple[int, ...]],
    *,
    value_ranges: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> dict[str, np.ndarray]:
    """One synthetic feed at exactly ``shapes`` (every input named): the feed a study measures
    latency on for one entry of ``--shapes``/``--optShapes``, e.g. each shape of several."""
    missing = [s.name for s in specs if s.name not in shapes]
    if missing:
        msg = f"no shape given for input(s) {missing} (shapes given: {dict(shapes)})"
        raise DatasetError(msg)
    resolved = input_specs(specs, shapes=shapes, value_ranges=value_ranges)
    rows = next((s.shape_override[s.batch_axis] for s in resolved if s.batch_axis is not None), 1)
    return dict(synthesize(resolved, max(int(rows), 1), seed).inputs)


__all__ = [
    "DEFAULT_DYNAMIC_DIM",
    "DEFAULT_INT_HIGH",
    "LABELS_KEY",
    "Dataset",
    "feed_at_shapes",
    "from_arrays",
    "load_dataset",
    "numpy_dtype",
    "synthesize",
    "validate_batch_size",
]
