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
import os
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from gptuner_core.errors import TuningCacheError


HEADER_KEYS: tuple[str, ...] = (
    "tuner_version",
    "accuracy_algorithm",
    "accuracy_parameter",
    "searching_algorithm",
    "command_line",
    "default_build_route",
    "tuning_expr",
    "files",
    "argv",
)
ROW_KEYS: tuple[str, ...] = (
    "iter",
    "build_route",
    "crash",
    "error_message",
    "accuracy_loss",
    "gpu_time",
)
ACCURACY_ALGORITHMS: dict[str, str] = {
    "l0": "L0",
    "l1": "L1",
    "l2": "L2",
    "linf": "LInf",
    "cos": "Cosine",
}
"""CLI spelling (``--accuracyAlgorithm``) -> the display name trtexec writes in the header."""

STYLE_NLOHMANN = "nlohmann"
STYLE_PYTHON = "python"


# -- records ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class CacheHeader:
    """Line 1 of a tuning cache. ``key_order`` is the order the keys are written in."""

    tuner_version: str = "unknown"
    accuracy_algorithm: str = "L0"
    accuracy_parameter: dict[str, Any] = field(
        default_factory=lambda: {"atol": 1e-05, "rtol": 1e-05, "epsilon": 0.0}
    )
    searching_algorithm: str = "fast"
    command_line: str = ""
    default_build_route: str = ""
    tuning_expr: str = ""
    files: dict[str, Any] = field(default_factory=dict)
    argv: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] = HEADER_KEYS

    @property
    def epsilon(self) -> float | None:
        """The accuracy threshold, or ``None`` when unset (trtexec writes 0 when unset)."""
        value = self.accuracy_parameter.get("epsilon")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            return None
        return float(value)

    def to_json(self) -> dict[str, Any]:
        """Ordered dict as written: ``key_order`` first, then extra keys not in it."""
        out: dict[str, Any] = {}
        for key in self.key_order:
            if key in HEADER_KEYS:
                value = getattr(self, key)
                out[key] = list(value) if key == "argv" else value
            elif key in self.extra:
                out[key] = self.extra[key]
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheRow:
    """One completed iteration. ``phase`` is inferred on read (1, or 2 for mixed phase 2)."""

    iter: int
    build_route: str
    crash: bool = False
    error_message: str = ""
    accuracy_loss: dict[str, float] | None = None
    gpu_time: float | None = None
    phase: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def route(self) -> Any:
        """:class:`~gptuner_core.routes.Route` parsed from ``build_route``."""
        from gptuner_core.routes import Route

        return Route.parse(self.build_route)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "iter": self.iter,
            "build_route": self.build_route,
            "crash": self.crash,
            "error_message": self.error_message,
            "accuracy_loss": self.accuracy_loss,
            "gpu_time": self.gpu_time,
        }
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


def accuracy_failed(row: CacheRow, header: CacheHeader) -> bool:
    """True when a non-crashed row failed the accuracy check.

    The row has no such field: trtexec records it as a non-empty ``error_message`` ("child
    exited with status 1") on a non-crashed row, and the losses reach ``epsilon`` (fail means
    ``loss >= epsilon``; a non-finite loss fails too).
    """
    if row.crash:
        return False
    if row.error_message:
        return True
    eps = header.epsilon
    if eps is None or not row.accuracy_loss:
        return False
    return any(not math.isfinite(v) or v >= eps for v in row.accuracy_loss.values())


def _eligible(row: CacheRow, header: CacheHeader) -> bool:
    return (
        not row.crash
        and not row.error_message
        and row.gpu_time is not None
        and math.isfinite(row.gpu_time)
        and not accuracy_failed(row, header)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TuningCache:
    """A whole cache file: header, rows in file order, warnings from reading it."""

    header: CacheHeader
    rows: tuple[CacheRow, ...] = ()
    warnings: tuple[str, ...] = ()
    style: str = STYLE_NLOHMANN
    source: str = ""

    def eligible_rows(self) -> tuple[CacheRow, ...]:
        """Rows trtexec may promote: not crashed, no error, accuracy passed, finite time."""
        return tuple(r for r in self.rows if _eligible(r, self.header))

    def best(self) -> CacheRow | None:
        """Eligible row with the lowest ``gpu_time`` (the first one on ties), or ``None``."""
        best: CacheRow | None = None
        for row in self.eligible_rows():
            assert row.gpu_time is not None
            if best is None or row.gpu_time < (best.gpu_time or 0.0):
                best = row
        return best

    @property
    def crashed(self) -> tuple[CacheRow, ...]:
        return tuple(r for r in self.rows if r.crash)

    @property
    def accuracy_failures(self) -> tuple[CacheRow, ...]:
        return tuple(r for r in self.rows if accuracy_failed(r, self.header))

    def phase_rows(self, phase: int) -> tuple[CacheRow, ...]:
        return tuple(r for r in self.rows if r.phase == phase)

    def to_string(self) -> str:
        lines = [dumps(self.header.to_json(), self.style)]
        lines += [dumps(r.to_json(), self.style) for r in self.rows]
        return "".join(f"{line}\n" for line in lines)

    def write(self, path: str | Path) -> None:
        """Write the whole file (truncating), flushed and fsynced."""
        _write_text(Path(path), self.to_string(), append=False)

    @classmethod
    def read(cls, path: str | Path) -> TuningCache:
        return read_tuning_cache(path)


# -- JSON in nlohmann's dump() format -----------------------------------------------------
def _exp(e: int) -> str:
    sign = "-" if e < 0 else "+"
    return f"{sign}{abs(e):02d}"


def format_double(x: float) -> str:
    """A double as nlohmann ``dump()`` writes it (shortest digits; NaN/inf become ``null``)."""
    if not math.isfinite(x):
        return "null"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digit_tuple, k = Decimal(repr(x)).as_tuple()
    assert isinstance(k, int)
    digits = "".join(map(str, digit_tuple))
    stripped = digits.rstrip("0")
    k += len(digits) - len(stripped)
    digits = stripped
    n = len(digits) + k
    prefix = "-" if sign else ""
    if k >= 0 and n <= 15:
        body = digits + "0" * k + ".0"
    elif 0 < n <= 15:
        body = digits[:n] + "." + digits[n:]
    elif -4 < n <= 0:
        body = "0." + "0" * (-n) + digits
    elif len(digits) == 1:
        body = digits + "e" + _exp(n - 1)
    else:
        body = digits[0] + "." + digits[1:] + "e" + _exp(n - 1)
    return prefix + body


def dump_nlohmann(value: Any) -> str:
    """Compact JSON exactly like ``nlohmann::ordered_json::dump()``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}:{dump_nlohmann(v)}"
            for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(dump_nlohmann(v) for v in value) + "]"
    msg = f"cannot write {type(value).__name__} to a tuning cache"
    raise TypeError(msg)


def dumps(value: Any, style: str = STYLE_NLOHMANN) -> str:
    """One JSONL line (no newline) in ``style`` (``nlohmann`` or ``python``)."""
    if style == STYLE_PYTHON:
        return json.dumps(value)
    return dump_nlohmann(value)


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
        not isinstance(loss, dict) or not all(_is_number(v) for v in loss.values())
    ):
        raise _bad(where, "accuracy_loss", "null or an object of numbers", loss)
    gpu = obj.get("gpu_time")
    if gpu is not None and not _is_number(gpu):
        raise _bad(where, "gpu_time", "a number of milliseconds or null", gpu)
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
        header_obj = json.loads(lines[0])
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
            obj = json.loads(line)
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
def _write_text(path: Path, text: str, *, append: bool) -> None:
    try:
        with open(path, "ab" if append else "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        msg = f"tuning cache '{path}': cannot write file ({exc.strerror or exc})"
        raise TuningCacheError(msg) from None


def write_tuning_cache(path: str | Path, cache: TuningCache) -> None:
    cache.write(path)


def write_header(path: str | Path, header: CacheHeader, *, style: str = STYLE_NLOHMANN) -> None:
    """Start a cache (truncating it) with ``header``, as a fresh trtexec run does."""
    _write_text(Path(path), dumps(header.to_json(), style) + "\n", append=False)


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
        json.loads(tail.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
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
    _write_text(p, prefix + dumps(row.to_json(), style) + "\n", append=True)


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
