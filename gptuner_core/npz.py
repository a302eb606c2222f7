"""Reading dataset ``.npz`` archives safely: ``allow_pickle=False``, one clear line per failure."""

from __future__ import annotations

import zipfile
from typing import TYPE_CHECKING

import numpy as np

from gptuner_core.errors import DatasetError


if TYPE_CHECKING:
    from pathlib import Path


def read_npz(path: Path) -> dict[str, np.ndarray]:
    """The named arrays of an ``.npz`` file; DatasetError saying what is wrong otherwise."""
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
