"""Slicing inputs and joining outputs along per-input batch axes (``None`` = a fixed input)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Mapping
    from collections.abc import Sequence

    import numpy as np


def rows_of(inputs: Mapping[str, np.ndarray], batch_axes: Mapping[str, int | None]) -> int:
    """Rows along the batch axes (inputs missing from ``batch_axes`` count along axis 0)."""
    for name, arr in inputs.items():
        axis = batch_axes.get(name, 0)
        if axis is not None:
            return int(arr.shape[axis])
    return 1


def take(
    inputs: Mapping[str, np.ndarray], batch_axes: Mapping[str, int | None], index: Any
) -> dict[str, np.ndarray]:
    """Rows ``index`` (a slice or an index array) of every batched input; fixed inputs whole."""
    out = {}
    for name, arr in inputs.items():
        axis = batch_axes.get(name, 0)
        if axis is None:
            out[name] = arr
        else:
            key = (slice(None),) * axis + (index,)
            out[name] = arr[key]
    return out


def iter_batches(
    inputs: Mapping[str, np.ndarray], batch_size: int, batch_axes: Mapping[str, int | None]
) -> Iterator[dict[str, np.ndarray]]:
    """Feeds of ``batch_size`` rows along each input's batch axis (views); fixed inputs whole.
    The engine's child uses this in place of slicing axis 0."""
    n = rows_of(inputs, batch_axes)
    for start in range(0, n, batch_size):
        yield take(inputs, batch_axes, slice(start, start + batch_size))


def stack_outputs(
    batches: Sequence[Mapping[str, np.ndarray]], rows: Sequence[int]
) -> dict[str, np.ndarray]:
    """Join per-batch outputs along each output's batch axis: the first axis whose size is the
    batch's row count in every batch (``stateN [2, B, 128]``: axis 1). An output with no such
    axis (one value per batch) is stacked along a new axis 0. The engine's child uses this in
    place of concatenating axis 0."""
    import numpy as np

    if not batches:
        return {}
    out = {}
    for name in batches[0]:
        arrays = [np.asarray(b[name]) for b in batches]
        ndim = arrays[0].ndim
        axis = next(
            (
                k for k in range(ndim)
                if all(a.ndim == ndim and a.shape[k] == r for a, r in zip(arrays, rows, strict=True))
            ),
            None,
        )
        out[name] = np.stack(arrays) if axis is None else np.concatenate(arrays, axis=axis)
    return out
