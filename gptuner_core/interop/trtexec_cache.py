"""trtexec tuning cache (``--tuningCacheFile``): JSON Lines, read and written byte for byte.

Format (``shared/reference/tensorrt-gpt.md`` §3.3, trtexec 11.1 ``sampleUtils.cpp``): line 1 is
the header object, then one object per completed iteration, each written with nlohmann's
``ordered_json::dump()`` (compact, insertion order, UTF-8 unescaped, doubles in shortest form)::

    {"tuner_version":"2.19.45","accuracy_algorithm":"L0","accuracy_parameter":{...},...}
    {"iter":0,"build_route":"-a=on","crash":false,"error_message":"","accuracy_loss":null,"gpu_time":0.02836}

Header keys: ``tuner_version, accuracy_algorithm, accuracy_parameter, searching_algorithm,
command_line, default_build_route, tuning_expr, files, argv``. Unknown header keys (Torch-TRT's
``partition_key``, ``user_tuning_cache_file``) are kept in :attr:`CacheHeader.extra` and the key
order of the file is kept, so reading then writing gives the same bytes. Files written by Python's
``json.dumps`` (Torch-TRT) are recognised and written back in that style.

Rows: ``iter`` is the index within its phase; in ``mixed`` runs phase-2 rows restart at 0, which is
how :attr:`CacheRow.phase` is inferred. A torn or blank last line (a writer killed mid-line) is
skipped and reported in :attr:`TuningCache.warnings`; a malformed line elsewhere raises
:class:`~gptuner_core.errors.TuningCacheError` naming the file and the line.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from gptuner_core.errors import TuningCacheError
from gptuner_core.interop.cache_records import ACCURACY_ALGORITHMS
from gptuner_core.interop.cache_records import HEADER_KEYS
from gptuner_core.interop.cache_records import ROW_KEYS
from gptuner_core.interop.cache_records import CacheHeader
from gptuner_core.interop.cache_records import CacheRow
from gptuner_core.interop.cache_records import TuningCache
from gptuner_core.interop.cache_records import accuracy_failed
from gptuner_core.interop.cache_records import write_text
from gptuner_core.interop.nlohmann import STYLE_NLOHMANN
from gptuner_core.interop.nlohmann import STYLE_PYTHON
from gptuner_core.interop.nlohmann import dump_nlohmann
from gptuner_core.interop.nlohmann import dumps
from gptuner_core.interop.nlohmann import format_double
from gptuner_core.jsonio import IntegerTooLong
from gptuner_core.jsonio import decode


# -- reading ------------------------------------------------------------------------------
def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _bad(where: str, key: str, expected: str, value: Any) -> TuningCacheError:
    shown = json.dumps(value)[:60] if _type_name(value) != "object" else "{...}"
    return TuningCacheError(
        f"{where}: field '{key}' must be {expected} (got {_type_name(value)} {shown})"
    )


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _finite(v: Any) -> bool:
    """A number a double holds (``1e400`` reads as inf, ``10**400`` overflows a double)."""
    try:
        return _is_number(v) and math.isfinite(float(v))
    except OverflowError:
        return False


def _parse_header(obj: Any, where: str) -> CacheHeader:
    if not isinstance(obj, dict):
        msg = f"{where}: the header must be a JSON object (got {_type_name(obj)})"
        raise TuningCacheError(msg)
    if "iter" in obj and "build_route" in obj:
        msg = f"{where}: expected the header line (tuner_version, tuning_expr, ...) but found an iteration row"
        raise TuningCacheError(msg)
    if "tuning_expr" not in obj:
        msg = f"{where}: the header is missing field 'tuning_expr' (keys found: {', '.join(obj) or 'none'})"
        raise TuningCacheError(msg)
    kwargs: dict[str, Any] = {}
    for key in (
        "tuner_version",
        "accuracy_algorithm",
        "searching_algorithm",
        "command_line",
        "default_build_route",
        "tuning_expr",
    ):
        if key in obj:
            if not isinstance(obj[key], str):
                raise _bad(where, key, "a string", obj[key])
            kwargs[key] = obj[key]
    for key in ("accuracy_parameter", "files"):
        if key in obj:
            if not isinstance(obj[key], dict):
                raise _bad(where, key, "an object", obj[key])
            kwargs[key] = obj[key]
    for key, value in kwargs.get("accuracy_parameter", {}).items():
        if key in ("atol", "rtol", "epsilon") and value is not None and not (_finite(value) and value >= 0):
            raise _bad(where, f"accuracy_parameter.{key}", "a finite number >= 0 or null", value)
    if "argv" in obj:
        argv = obj["argv"]
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise _bad(where, "argv", "an array of strings", argv)
        kwargs["argv"] = tuple(argv)
    extra = {k: v for k, v in obj.items() if k not in HEADER_KEYS}
    return CacheHeader(**kwargs, extra=extra, key_order=tuple(obj))


def _parse_row(obj: Any, where: str, phase: int) -> CacheRow:
    if not isinstance(obj, dict):
        msg = f"{where}: an iteration row must be a JSON object (got {_type_name(obj)})"
        raise TuningCacheError(msg)
    for key in ("iter", "build_route", "crash"):
        if key not in obj:
            msg = f"{where}: iteration row is missing field '{key}' (expected keys: {', '.join(ROW_KEYS)})"
            raise TuningCacheError(msg)
    it = obj["iter"]
    if not isinstance(it, int) or isinstance(it, bool) or it < 0:
        raise _bad(where, "iter", "a non-negative integer", it)
    if not isinstance(obj["build_route"], str):
        raise _bad(where, "build_route", "a string", obj["build_route"])
    if not isinstance(obj["crash"], bool):
        raise _bad(where, "crash", "true or false", obj["crash"])
    error = obj.get("error_message", "")
    if not isinstance(error, str):
        raise _bad(where, "error_message", "a string", error)
    loss = obj.get("accuracy_loss")
    if loss is not None and (
        not isinstance(loss, dict) or not all(_finite(v) and v >= 0 for v in loss.values())
    ):
        raise _bad(where, "accuracy_loss", "null or an object of finite numbers >= 0", loss)
    gpu = obj.get("gpu_time")
    if gpu is not None and not (_finite(gpu) and gpu > 0):
        raise _bad(where, "gpu_time", "a finite number of milliseconds > 0, or null", gpu)
    return CacheRow(
        iter=it,
        build_route=obj["build_route"],
        crash=obj["crash"],
        error_message=error,
        accuracy_loss=loss,
        gpu_time=gpu,
        phase=phase,
        extra={k: v for k, v in obj.items() if k not in ROW_KEYS},
    )


def parse_tuning_cache(text: str, *, source: str = "<string>") -> TuningCache:
    """Parse cache text; ``source`` names the file in messages."""
    label = f"tuning cache {source}"
    lines = text.split("\n")
    ends_with_newline = lines[-1] == ""
    if ends_with_newline:
        lines.pop()
    if not lines or not lines[0].strip():
        msg = f"{label}: line 1: expected the header JSON object (got an empty {'file' if not lines else 'line'})"
        raise TuningCacheError(msg)
    try:
        header_obj = decode(lines[0])
    except IntegerTooLong as exc:
        msg = f"{label}: line 1: header holds {exc}"
        raise TuningCacheError(msg) from None
    except json.JSONDecodeError as exc:
        msg = f"{label}: line 1: header is not valid JSON ({exc.msg} at column {exc.colno})"
        raise TuningCacheError(msg) from None
    header = _parse_header(header_obj, f"{label}: line 1")
    style = (
        STYLE_PYTHON if lines[0] == json.dumps(header_obj) and ", " in lines[0] else STYLE_NLOHMANN
    )
    rows: list[CacheRow] = []
    warnings: list[str] = []
    phase = 1
    last = len(lines)
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            warnings.append(f"line {number}: blank line skipped")
            continue
        try:
            obj = decode(line)
        except IntegerTooLong as exc:
            msg = f"{label}: line {number}: {exc}; expected an iteration row"
            raise TuningCacheError(msg) from None
        except json.JSONDecodeError as exc:
            if number == last:
                torn = "" if ends_with_newline else ", no final newline"
                warnings.append(f"line {number}: torn last line skipped ({exc.msg}{torn})")
                continue
            msg = f"{label}: line {number}: not valid JSON ({exc.msg} at column {exc.colno}); expected an iteration row"
            raise TuningCacheError(msg) from None
        if rows and isinstance(obj, dict) and obj.get("iter") == 0:
            phase += 1
        rows.append(_parse_row(obj, f"{label}: line {number}", phase))
    return TuningCache(
        header=header, rows=tuple(rows), warnings=tuple(warnings), style=style, source=source
    )


def read_tuning_cache(path: str | Path) -> TuningCache:
    """Read a cache file written by trtexec, Torch-TRT or us."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except OSError as exc:
        msg = f"tuning cache '{p}': cannot read file ({exc.strerror or exc})"
        raise TuningCacheError(msg) from None
    except UnicodeDecodeError:
        msg = f"tuning cache '{p}': expected UTF-8 JSON Lines (got binary data)"
        raise TuningCacheError(msg) from None
    return parse_tuning_cache(text, source=f"'{p}'")


# -- writing ------------------------------------------------------------------------------
def write_tuning_cache(path: str | Path, cache: TuningCache) -> None:
    cache.write(path)


def write_header(path: str | Path, header: CacheHeader, *, style: str = STYLE_NLOHMANN) -> None:
    """Start a cache (truncating it) with ``header``, as a fresh trtexec run does."""
    write_text(Path(path), dumps(header.to_json(), style) + "\n", append=False)


def _repair_tail(path: Path) -> str:
    """Text to write before appending: drop a torn last line, add a missing newline."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        msg = f"tuning cache '{path}': cannot append a row, the file does not exist (write the header first)"
        raise TuningCacheError(msg) from None
    if not data or data.endswith(b"\n"):
        return ""
    start = data.rfind(b"\n") + 1
    tail = data[start:]
    try:
        decode(tail.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):  # JSONDecodeError, IntegerTooLong: a torn row
        if start == 0:
            msg = f"tuning cache '{path}': the header line is torn; cannot append rows"
            raise TuningCacheError(msg) from None
        with open(path, "r+b") as f:
            f.truncate(start)
        return ""
    return "\n"


def append_row(path: str | Path, row: CacheRow, *, style: str = STYLE_NLOHMANN) -> None:
    """Append one iteration row, flushed and fsynced (a torn previous line is dropped first)."""
    p = Path(path)
    prefix = _repair_tail(p)
    write_text(p, prefix + dumps(row.to_json(), style) + "\n", append=True)


def with_rows(cache: TuningCache, rows: list[CacheRow] | tuple[CacheRow, ...]) -> TuningCache:
    """A copy of ``cache`` with other rows (phases re-inferred on the next read)."""
    return replace(cache, rows=tuple(rows))


__all__ = [
    "ACCURACY_ALGORITHMS",
    "HEADER_KEYS",
    "ROW_KEYS",
    "CacheHeader",
    "CacheRow",
    "TuningCache",
    "accuracy_failed",
    "append_row",
    "dump_nlohmann",
    "format_double",
    "parse_tuning_cache",
    "read_tuning_cache",
    "write_header",
    "write_tuning_cache",
]
