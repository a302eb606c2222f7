"""numpy dtypes for backend dtype names, and value-preserving casts of dataset arrays.

Arrays are cast to the model's dtype when that keeps their meaning: any real number to a float
input (float64 -> float32 is fine; an overflow to inf is not), integers/bools to integer inputs
only when every value is preserved.
"""

from __future__ import annotations

import numpy as np

from gptuner_core.errors import DatasetError


def _contiguous(array: np.ndarray) -> np.ndarray:
    """C-contiguous with the same shape (``np.ascontiguousarray`` turns a scalar into (1,))."""
    return np.ascontiguousarray(array).reshape(array.shape)


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


def cast(array: np.ndarray, target: np.dtype | None, where: str) -> np.ndarray:
    if array.dtype.kind not in "biuf":
        msg = f"{where} has dtype {array.dtype} (expected a numeric or bool array)"
        raise DatasetError(msg)
    if target is None or array.dtype == target:
        return _contiguous(array)
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
        return _contiguous(cast)
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
    return _contiguous(cast)
