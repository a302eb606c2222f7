"""Study inputs: a dataset ``.npz`` validated against the model, or synthesized inputs.

Dataset files are ``.npz`` archives (``numpy.savez``) with one array per model input, named like
the input, batch-first: axis 0 counts rows and lines up with the model input's first axis, the
other axes must match the model's fixed dimensions. An optional ``labels`` array (one entry per
row: integer class ids, or one-hot rows) feeds task metrics such as top-1. If the model itself has
an input named ``labels``, that array is the input and the dataset has no labels.

Files are read with ``allow_pickle=False``: arrays of Python objects are refused, never unpickled.

Arrays are cast to the model's dtype when that keeps their meaning: any real number to a float
input (float64 -> float32 is fine; an overflow to inf is not), integers/bools to integer inputs
only when every value is preserved.

Synthetic inputs (:func:`synthesize`) serve models without a dataset: random normal floats, ints
in ``[0, int_high)`` (default 10, safe for index/embedding inputs), random bools. Dynamic
dimensions other than the first are resolved from ``dims`` (symbolic name -> size) or
:data:`DEFAULT_DYNAMIC_DIM` (16, e.g. a sequence length); axis 0 holds the ``n`` rows.
**Accuracy on synthetic inputs only measures agreement between the golden (default-route)
outputs and each candidate's outputs, not task accuracy**; use a real dataset for that.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from gptuner_core.errors import DatasetError


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Mapping
    from collections.abc import Sequence

    from gptuner_core.backends._base import TensorSpec


LABELS_KEY = "labels"
DEFAULT_DYNAMIC_DIM = 16
DEFAULT_INT_HIGH = 10

_DTYPE_ALIASES = {
    "float": "float32",
    "half": "float16",
    "double": "float64",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "bfloat16": "float32",  # no numpy bfloat16: host data is float32, the backend converts
}


# -- dtypes --------------------------------------------------------------------------------
def numpy_dtype(spec_dtype: str) -> np.dtype | None:
    """numpy dtype for a backend's dtype name (``float32``, ``tensor(float)``, ``torch.int64``,
    ``half``...); ``None`` when it has no numpy equivalent (e.g. ``string``)."""
    name = str(spec_dtype).strip()
    if name.startswith("tensor(") and name.endswith(")"):
        name = name[len("tensor(") : -1]
    name = name.removeprefix("torch.").removeprefix("numpy.")
    name = _DTYPE_ALIASES.get(name, name)
    try:
        dtype = np.dtype(name)
    except TypeError:
        return None
    return dtype if dtype.kind in "biuf" else None


def _cast(array: np.ndarray, target: np.dtype | None, where: str) -> np.ndarray:
    if array.dtype.kind not in "biuf":
        msg = f"{where} has dtype {array.dtype} (expected a numeric or bool array)"
        raise DatasetError(msg)
    if target is None or array.dtype == target:
        return np.ascontiguousarray(array)
    if target.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            cast = array.astype(target)
        if array.dtype.kind == "f":
            new_inf = np.isinf(cast) & np.isfinite(array)
        else:
            new_inf = np.isinf(cast)
        if new_inf.any():
            msg = (
                f"{where} has dtype {array.dtype}, expected {target}: "
                f"{int(new_inf.sum())} value(s) overflow {target}"
            )
            raise DatasetError(msg)
        return np.ascontiguousarray(cast)
    # integer or bool target: only a value-preserving cast is accepted
    ok = array.dtype.kind != "f" or bool(np.isfinite(array).all())
    if ok:
        with np.errstate(over="ignore", invalid="ignore"):
            cast = array.astype(target)
        ok = bool(np.array_equal(cast.astype(array.dtype), array))
    if not ok:
        msg = (
            f"{where} has dtype {array.dtype}, expected {target}: values cannot be cast "
            f"without changing them (e.g. fractions, out-of-range or non-0/1 values)"
        )
        raise DatasetError(msg)
    return np.ascontiguousarray(cast)


# -- the dataset ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """Validated model inputs (batch-first), optional labels, and where they came from.

    Attributes:
        inputs: model input name -> array with ``n_rows`` along axis 0, in the model's dtype.
        labels: one entry per row, or ``None``.
        n_rows: rows in every input.
        source: the file path, or ``"synthetic(n=64, seed=0)"``.
        synthetic: True for :func:`synthesize` (accuracy = golden-vs-candidate agreement only).
    """

    inputs: dict[str, np.ndarray]
    labels: np.ndarray | None
    n_rows: int
    source: str
    synthetic: bool = False

    def _check_batch_size(self, batch_size: int) -> int:
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            msg = f"batch size must be an int >= 1 (got {batch_size!r})"
            raise DatasetError(msg)
        return int(batch_size)

    def batches(self, batch_size: int) -> Iterator[dict[str, np.ndarray]]:
        """Feeds of ``batch_size`` rows in order (views, no copies); the last may be smaller."""
        bs = self._check_batch_size(batch_size)
        for start in range(0, self.n_rows, bs):
            yield {name: arr[start : start + bs] for name, arr in self.inputs.items()}

    def head(self, batch_size: int) -> dict[str, np.ndarray]:
        """The first ``batch_size`` rows: the feed used for latency measurement."""
        bs = self._check_batch_size(batch_size)
        if bs > self.n_rows:
            msg = (
                f"dataset '{self.source}' has {self.n_rows} row(s); batch size {bs} needs at "
                f"least {bs}"
            )
            raise DatasetError(msg)
        return {name: arr[:bs] for name, arr in self.inputs.items()}

    def calibration(self, n: int) -> dict[str, np.ndarray]:
        """Up to ``n`` rows for calibration, evenly spread over the dataset (deterministic), so
        a dataset sorted by class still yields a representative sample."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            msg = f"calibration rows must be an int >= 1 (got {n!r})"
            raise DatasetError(msg)
        if n >= self.n_rows:
            return dict(self.inputs)
        index = np.linspace(0, self.n_rows - 1, num=int(n)).round().astype(np.int64)
        return {name: np.ascontiguousarray(arr[index]) for name, arr in self.inputs.items()}


# -- validation ----------------------------------------------------------------------------
def _fmt_shape(shape: Sequence[int | str | None]) -> str:
    dims = ["?" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def from_arrays(
    arrays: Mapping[str, Any],
    specs: Sequence[TensorSpec],
    *,
    labels: Any = None,
    source: str = "<arrays>",
    synthetic: bool = False,
) -> Dataset:
    """Validate named batch-first arrays against the model's input specs into a :class:`Dataset`.

    Raises DatasetError naming ``source``, the input, and what was expected vs found: missing or
    extra names, wrong rank, a fixed dimension that differs, inconsistent row counts or symbolic
    dimensions, a dtype that cannot be cast.
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
    inputs: dict[str, np.ndarray] = {}
    n_rows: int | None = None
    rows_from = ""
    symbols: dict[str, tuple[int, str]] = {}
    for spec in specs:
        arr = np.asarray(arrays[spec.name])
        what = f"{where}: input '{spec.name}'"
        if len(spec.shape) == 0:
            msg = f"{what}: scalar (rank-0) model inputs cannot be fed batch-first from a dataset"
            raise DatasetError(msg)
        if arr.ndim != len(spec.shape):
            msg = (
                f"{what} has shape {arr.shape} (rank {arr.ndim}), expected rank "
                f"{len(spec.shape)} {_fmt_shape(spec.shape)}"
            )
            raise DatasetError(msg)
        for axis, (want, got) in enumerate(zip(spec.shape, arr.shape, strict=True)):
            if axis == 0:
                if isinstance(want, int) and got % want:
                    msg = (
                        f"{what} has {got} row(s) along axis 0; the model's first dimension "
                        f"is fixed at {want}, so rows must come in multiples of {want}"
                    )
                    raise DatasetError(msg)
            elif isinstance(want, int) and want != got:
                msg = (
                    f"{what} has shape {arr.shape}, expected {_fmt_shape(spec.shape)} "
                    f"(axis {axis}: expected {want}, found {got})"
                )
                raise DatasetError(msg)
            elif isinstance(want, str) and axis > 0:
                seen = symbols.setdefault(want, (got, spec.name))
                if seen[0] != got:
                    msg = (
                        f"{where}: dimension '{want}' is {seen[0]} in input '{seen[1]}' but "
                        f"{got} in input '{spec.name}' (axis {axis})"
                    )
                    raise DatasetError(msg)
        if n_rows is None:
            n_rows, rows_from = arr.shape[0], spec.name
        elif arr.shape[0] != n_rows:
            msg = (
                f"{where}: input '{spec.name}' has {arr.shape[0]} row(s), input "
                f"'{rows_from}' has {n_rows} (every array needs the same rows along axis 0)"
            )
            raise DatasetError(msg)
        inputs[spec.name] = _cast(arr, numpy_dtype(spec.dtype), what)
    assert n_rows is not None
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
    return Dataset(inputs=inputs, labels=lab, n_rows=n_rows, source=source, synthetic=synthetic)


def validate_batch_size(specs: Sequence[TensorSpec], batch_size: int) -> None:
    """Refuse a batch size that a model input with a fixed first dimension cannot take."""
    for spec in specs:
        if spec.shape and isinstance(spec.shape[0], int) and spec.shape[0] != batch_size:
            msg = (
                f"batch size {batch_size} does not fit model input '{spec.name}', whose first "
                f"dimension is fixed at {spec.shape[0]} (use --batch-size {spec.shape[0]})"
            )
            raise DatasetError(msg)


# -- loading -------------------------------------------------------------------------------
def load_dataset(path: str | os.PathLike[str], specs: Sequence[TensorSpec]) -> Dataset:
    """Load and validate a dataset ``.npz`` (see the module docstring for the format)."""
    p = Path(path)
    if not p.is_file():
        msg = f"dataset file '{p}' not found" if not p.exists() else f"dataset '{p}' is not a file"
        raise DatasetError(msg)
    arrays = _read_npz(p)
    spec_names = {s.name for s in specs}
    labels = None
    if LABELS_KEY in arrays and LABELS_KEY not in spec_names:
        labels = arrays.pop(LABELS_KEY)
    return from_arrays(arrays, specs, labels=labels, source=str(p))


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        data = np.load(path, allow_pickle=False)
    except ValueError as exc:  # numpy treats unknown content as a pickle and refuses it
        msg = (
            f"dataset '{path}' is not an .npz archive of named arrays (numpy found neither a zip "
            "archive nor an .npy array; pickles are refused, never loaded); save it with "
            "numpy.savez(path, input_name=array, ..., labels=array)"
        )
        raise DatasetError(msg) from exc
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        msg = f"dataset '{path}' cannot be read: {exc} (truncated or not an .npz archive?)"
        raise DatasetError(msg) from exc
    if isinstance(data, np.ndarray):
        msg = (
            f"dataset '{path}' holds a single .npy array; expected an .npz archive of named "
            "arrays (numpy.savez(path, input_name=array, ...))"
        )
        raise DatasetError(msg)
    arrays: dict[str, np.ndarray] = {}
    with data:
        if not data.files:
            msg = f"dataset '{path}' contains no arrays"
            raise DatasetError(msg)
        for name in data.files:
            try:
                arrays[name] = data[name]
            except ValueError as exc:
                if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
                    msg = (
                        f"dataset '{path}': array '{name}' holds Python objects (pickled); "
                        "datasets are loaded with allow_pickle=False, save numeric arrays"
                    )
                else:
                    msg = f"dataset '{path}': array '{name}' cannot be read: {exc}"
                raise DatasetError(msg) from exc
            except Exception as exc:  # zlib.error, EOFError, BadZipFile from a truncated member
                msg = (
                    f"dataset '{path}': array '{name}' cannot be read "
                    f"({type(exc).__name__}: {exc}); the file looks truncated or damaged"
                )
                raise DatasetError(msg) from exc
    return arrays


# -- synthesis -----------------------------------------------------------------------------
def synthesize(
    specs: Sequence[TensorSpec],
    n: int,
    seed: int = 0,
    *,
    dims: Mapping[str, int] | None = None,
    int_high: int = DEFAULT_INT_HIGH,
) -> Dataset:
    """Random inputs for a model without a dataset (see the module docstring).

    Axis 0 holds ``n`` rows (rounded up to a multiple of a fixed first dimension); other dynamic
    dimensions come from ``dims`` by symbolic name, else :data:`DEFAULT_DYNAMIC_DIM`.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        msg = f"synthetic rows must be an int >= 1 (got {n!r})"
        raise DatasetError(msg)
    dims = dict(dims or {})
    for name, size in dims.items():
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            msg = f"dynamic dimension '{name}' must be an int >= 1 (got {size!r})"
            raise DatasetError(msg)
    rows = int(n)
    for spec in specs:
        if spec.shape and isinstance(spec.shape[0], int) and spec.shape[0] > 0:
            b = spec.shape[0]
            rows = -(-rows // b) * b
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for spec in specs:
        dtype = numpy_dtype(spec.dtype)
        if dtype is None:
            msg = f"cannot synthesize model input '{spec.name}' of dtype '{spec.dtype}' (expected a numeric or bool dtype)"
            raise DatasetError(msg)
        if len(spec.shape) == 0:
            msg = f"cannot synthesize scalar (rank-0) model input '{spec.name}' batch-first"
            raise DatasetError(msg)
        shape = [rows]
        for d in spec.shape[1:]:
            if isinstance(d, int) and d > 0:
                shape.append(d)
            elif isinstance(d, str) and d in dims:
                shape.append(dims[d])
            else:
                shape.append(DEFAULT_DYNAMIC_DIM)
        if dtype.kind == "f":
            arr = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            arr = rng.integers(0, 2, size=shape).astype(bool)
        else:
            high = min(int_high, int(np.iinfo(dtype).max) + 1)
            arr = rng.integers(0, high, size=shape).astype(dtype)
        arrays[spec.name] = arr
    source = f"synthetic(n={rows}, seed={seed})"
    return from_arrays(arrays, specs, source=source, synthetic=True)


__all__ = [
    "DEFAULT_DYNAMIC_DIM",
    "DEFAULT_INT_HIGH",
    "LABELS_KEY",
    "Dataset",
    "from_arrays",
    "load_dataset",
    "numpy_dtype",
    "synthesize",
    "validate_batch_size",
]
