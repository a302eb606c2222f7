"""Output tensors of a ``trtexec --loadEngine`` run, read losslessly.

``--exportOutput`` prints values with a plain ``os << v`` (sampleReporting.cpp
``exportJSONOutput``): about 6 significant digits, ``nan``/``inf`` that make the file invalid JSON,
integers turned into floats. The lossless path is ``--dumpRawBindingsToFile``: trtexec writes
each binding's host buffer, byte for byte, to ``<name>.<input|output>.<d0.d1...>.<dtype>.raw`` in
its working directory, the whole name passed through ``genFilenameSafeString`` (characters other
than letters, digits and ``._-,`` become ``_``). Raw dumps are fetched from the device only when
output export is on, so the run keeps ``--exportOutput`` too (:data:`OUTPUT_FLAGS`); its JSON
gives the tensor names, the raw files give the values.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gptuner_core.errors import BackendError


#: Flags of the run that fetches outputs (``--exportOutput=<file>`` is added with its path).
OUTPUT_FLAGS: tuple[str, ...] = ("--dumpRawBindingsToFile",)
#: trtexec's ``operator<<(DataType)`` spelling -> numpy dtype name (None: numpy cannot hold it).
RAW_DTYPES: dict[str, str | None] = {
    "fp32": "float32", "fp16": "float16", "int8": "int8", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "bool": "bool", "bf16": None, "fp8": None, "int4": None, "fp4": None, "e8m0": None,
}
_MAX_FILENAME = 150
_NAME_LINE = re.compile(r'^\s*(?:,\s*)?\{ "name" : "(.*)"\s*$')


def safe_filename(text: str) -> str:
    """trtexec's ``genFilenameSafeString`` (common.h), including its 150-character ellipsis."""
    def keep(c: str) -> str:
        return c if (c.isascii() and c.isalnum()) or c in "._-," else "_"

    if len(text) <= _MAX_FILENAME:
        return "".join(map(keep, text))
    half = (_MAX_FILENAME - 3) // 2
    return "".join(map(keep, text[:half])) + "..." + "".join(map(keep, text[-half:]))


def exported_names(text: str) -> list[str]:
    """Tensor names in an ``--exportOutput`` file (read line-wise: the values may be invalid JSON)."""
    return [m.group(1) for line in text.splitlines() if (m := _NAME_LINE.match(line))]


def read_raw_outputs(folder: Path, names: list[str]) -> dict[str, Any]:
    """``{name: array}`` from the ``*.output.*.raw`` files trtexec dumped into ``folder``."""
    import numpy as np

    files = {p.name: p for p in folder.glob("*.raw")}
    out: dict[str, Any] = {}
    for name in names:
        prefix = safe_filename(name) + ".output."
        found = [f for f in files if f.startswith(prefix) and re.fullmatch(r"[0-9.]*\.[a-z0-9]+\.raw", f[len(prefix):])]
        if len(found) != 1:
            msg = (
                f"trtexec raw output for tensor {name!r}: expected one file '{prefix}<dims>.<dtype>.raw' in {folder} "
                f"(found {sorted(found) or 'none'}; files there: {sorted(files)[:8]})"
            )
            raise BackendError(msg)
        rest = found[0][len(prefix) : -len(".raw")]
        dims_text, _, dtype = rest.rpartition(".")
        np_dtype = RAW_DTYPES.get(dtype)
        if np_dtype is None:
            msg = f"trtexec raw output for tensor {name!r} has data type {dtype!r}, which numpy cannot hold exactly"
            raise BackendError(msg)
        dims = tuple(int(d) for d in dims_text.split(".")) if dims_text else ()
        data = files[found[0]].read_bytes()
        arr = np.frombuffer(data, dtype=np_dtype)
        if arr.size != int(np.prod(dims, dtype=np.int64)):
            msg = f"trtexec raw output {found[0]}: {len(data)} bytes do not hold {dims} {dtype} values"
            raise BackendError(msg)
        out[name] = arr.reshape(dims).copy()
    return out


def parse_exported_output(text: str, source: str = "<output>") -> dict[str, Any]:
    """``--exportOutput`` JSON -> float32 arrays. Lossy (6 digits): kept only for reading old runs."""
    import numpy as np

    try:
        data = json.loads(text)
    except ValueError as exc:
        msg = f"trtexec output file {source}: not valid JSON ({exc})"
        raise BackendError(msg) from None
    if not isinstance(data, list):
        msg = f"trtexec output file {source}: expected a list of tensors (got {type(data).__name__})"
        raise BackendError(msg)
    out = {}
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not {"name", "dimensions", "values"} <= set(item):
            msg = f"trtexec output file {source}: entry {i} needs name, dimensions and values (got {item!r:.120})"
            raise BackendError(msg)
        dims_text = str(item["dimensions"]).strip()
        dims = tuple(int(d) for d in dims_text.split("x")) if dims_text else ()
        arr = np.asarray(item["values"], dtype=np.float32)
        if arr.size != int(np.prod(dims, dtype=np.int64)):
            msg = f"trtexec output file {source}: tensor '{item['name']}' has {arr.size} values for dimensions {dims_text}"
            raise BackendError(msg)
        out[str(item["name"])] = arr.reshape(dims)
    return out
