"""Calibration inputs for static quantization: rows along each input's batch axis.

A recurrent state ``[2, B, 128]`` is sliced along axis 1 and a scalar (``sr``) fed whole with
every calibration batch (batch axes from :func:`gptuner_core.shapes.default_batch_axes`).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    import numpy as np
    import onnx

#: rows of calibration data used at most (ORT's MinMax/Entropy cost grows with it).
MAX_CALIBRATION_ROWS = 128
CALIBRATION_CHUNK = 16


def calibration_sha(calibration: dict[str, np.ndarray] | None) -> str:
    import numpy as np

    h = hashlib.sha256()
    for name in sorted(calibration or {}):
        arr = np.asarray(calibration[name])
        arr = np.ascontiguousarray(arr).reshape(arr.shape)
        h.update(f"{name}|{arr.dtype}|{arr.shape}|".encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def check_calibration(
    model: onnx.ModelProto, calibration: dict[str, np.ndarray] | None
) -> tuple[dict[str, np.ndarray], dict[str, int | None]]:
    """Calibration rows (at most MAX_CALIBRATION_ROWS along each input's batch axis) and the
    batch axes: a recurrent state ``[2, B, 128]`` is sliced along axis 1, a scalar fed whole."""
    import numpy as np

    from gptuner_core.backends.onnxruntime.model import input_specs
    from gptuner_core.shapes import default_batch_axes
    from gptuner_core.shapes import take

    specs = input_specs(model)
    names = [s.name for s in specs]
    if not calibration:
        msg = (
            f"static quantization needs calibration inputs named {names} "
            "(got none: pass the study's calibration/reference dataset)"
        )
        raise BackendError(msg)
    missing = [n for n in names if n not in calibration]
    if missing:
        msg = (
            f"calibration inputs do not match the model: missing {missing} "
            f"(expected {names}, got {sorted(calibration)})"
        )
        raise BackendError(msg)
    axes = default_batch_axes(specs)
    arrays = {n: np.asarray(calibration[n]) for n in names}
    counts = {
        n: (a.shape[axes[n]] if a.ndim > axes[n] else 0)
        for n, a in arrays.items() if axes[n] is not None
    }
    if len(set(counts.values())) > 1 or 0 in counts.values():
        msg = (
            f"calibration inputs need the same non-zero number of rows per input along their "
            f"batch axes {dict((n, axes[n]) for n in counts)} (got {counts})"
        )
        raise BackendError(msg)
    rows = take(arrays, axes, slice(0, MAX_CALIBRATION_ROWS))
    return rows, axes


def reader(model: onnx.ModelProto, rows: dict[str, np.ndarray], axes: dict[str, int | None]):  # noqa: ANN202
    from onnxruntime.quantization import CalibrationDataReader

    from gptuner_core.backends.onnxruntime.model import input_specs
    from gptuner_core.shapes import iter_batches
    from gptuner_core.shapes import rows_of

    fixed_batch = any(
        axes.get(s.name) is not None and isinstance(s.shape[axes[s.name]], int)
        for s in input_specs(model)
        if s.name in rows
    )
    step = 1 if fixed_batch else CALIBRATION_CHUNK
    feeds = list(iter_batches(rows, step, axes)) if rows_of(rows, axes) else [rows]

    class _Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._it = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._it, None)

    return _Reader()
