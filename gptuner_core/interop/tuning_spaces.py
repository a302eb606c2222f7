"""Brute-forced GPU tuning spaces, read from the community's T4 format or Kernel Tuner's cache.

* **T4** (``schema_version``, ``metadata``, ``results[]``): each result has ``configuration``
  (parameter -> value), ``times`` (``compilation``, ``runtimes[]`` in ``metadata.timeunit``) and
  ``invalidity`` (``correct`` = measured; ``compile`` / ``runtime`` = failed; ``constraints`` =
  excluded by the kernel's restrictions). The parameters' value lists are the values seen.
* **Kernel Tuner cache** (``tune_params``, ``tune_params_keys``, ``cache{"v1,v2,...": entry}``):
  ``entry["time"]`` a number (measured, ``times[]`` the raw runtimes, ``compile_time`` in ms), or a
  string: ``InvalidConfig`` is excluded by the restrictions, anything else
  (``CompilationFailedConfig``, ``RuntimeFailedConfig``) failed.

Both files may be gzipped (``.json.gz``). :func:`read_space` returns a :class:`TuningSpace`: the
parameters with their values in order and one :class:`Configuration` per entry of the file.
Everything is checked here; a malformed file raises :class:`TuningSpaceError` with one line.
"""

from __future__ import annotations

import gzip
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gptuner_core.errors import TuningSpaceError


FORMATS = ("t4", "kerneltuner")
#: outcomes of one configuration
MEASURED, FAILED, EXCLUDED = "measured", "failed", "excluded"
_UNIT_MS = {"milliseconds": 1.0, "miliseconds": 1.0, "ms": 1.0, "seconds": 1e3, "s": 1e3,
            "microseconds": 1e-3, "us": 1e-3, "nanoseconds": 1e-6, "ns": 1e-6}


@dataclass(frozen=True, slots=True, kw_only=True)
class Configuration:
    """One configuration of the file: its values, outcome, samples (ms) and compile time (s)."""

    values: tuple[Any, ...]
    outcome: str
    reason: str = ""
    samples_ms: tuple[float, ...] = ()
    compile_s: float | None = None
    benchmark_s: float | None = None
    timestamp: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TuningSpace:
    """A tuning space as read: parameters (name -> values, in order) and configurations."""

    source: str
    format: str
    parameters: dict[str, tuple[Any, ...]]
    configurations: tuple[Configuration, ...]
    kernel: str = ""
    device: str = ""
    problem_size: Any = None
    objective: str = "time"


def _fail(source: str, what: str) -> TuningSpaceError:
    return TuningSpaceError(f"tuning space '{source}': {what}")


def load_document(path: str | Path) -> Any:
    """The JSON document of ``path`` (gzipped or not)."""
    from gptuner_core.jsonio import loads

    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise _fail(str(p), f"cannot read the file ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise _fail(str(p), f"not a readable gzip file ({exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(str(p), "expected UTF-8 JSON text (got binary data)") from None
    return loads(text, f"tuning space '{p}'", TuningSpaceError)


def detect_format(doc: Any) -> str | None:
    """``"t4"``, ``"kerneltuner"`` or ``None`` when the document is neither."""
    if isinstance(doc, dict) and "results" in doc and ("schema_version" in doc or "metadata" in doc):
        return "t4"
    if isinstance(doc, dict) and "cache" in doc and "tune_params" in doc:
        return "kerneltuner"
    return None


def read_space(path: str | Path, fmt: str = "auto", doc: Any = None) -> TuningSpace:
    """Read a T4 or Kernel Tuner file (``fmt`` ``"auto"`` detects it from the document)."""
    source = str(path)
    if doc is None:
        doc = load_document(path)
    found = detect_format(doc)
    if fmt == "auto":
        if found is None:
            raise _fail(source, "expected a T4 file (schema_version, metadata, results) or a Kernel "
                                "Tuner cache (tune_params, cache); got neither")
        fmt = found
    elif fmt not in FORMATS:
        raise _fail(source, f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    elif found != fmt:
        want = "schema_version/metadata and results" if fmt == "t4" else "tune_params and cache"
        raise _fail(source, f"not a {fmt} file (expected top-level {want}; got "
                            f"{sorted(doc)[:6] if isinstance(doc, dict) else type(doc).__name__})")
    return _read_t4(source, doc) if fmt == "t4" else _read_kerneltuner(source, doc)


def _number(value: Any) -> float | None:
    """A finite number as a float, else ``None`` (an integer no float holds too: issue 43)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value) if math.isfinite(value) else None
    except OverflowError:
        return None


def _samples(source: str, where: str, values: Any, scale: float) -> tuple[float, ...]:
    if values is None:
        return ()
    if not isinstance(values, list):
        raise _fail(source, f"{where}: runtimes must be a list of numbers (got {type(values).__name__})")
    out = []
    for v in values:
        x = _number(v)
        if x is None or x <= 0:
            raise _fail(source, f"{where}: runtimes must be positive numbers (got {v!r})")
        out.append(x * scale)
    return tuple(out)


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def _scalar(source: str, where: str, name: str, value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) and not (isinstance(value, float) and not math.isfinite(value)):
        return value
    raise _fail(source, f"{where}: parameter '{name}' must be a number or a string (got {value!r})")


def _ordered(values: list[Any]) -> tuple[Any, ...]:
    """Values seen, numbers ascending (strings keep their first-seen order after them)."""
    nums = sorted({v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)})
    rest = list(dict.fromkeys(v for v in values if not (isinstance(v, (int, float)) and not isinstance(v, bool))))
    return (*nums, *rest)


def _read_t4(source: str, doc: dict[str, Any]) -> TuningSpace:
    meta = doc.get("metadata") or {}
    if not isinstance(meta, dict):
        raise _fail(source, f"'metadata' must be an object (got {type(meta).__name__})")
    unit = str(meta.get("timeunit", "milliseconds")).lower()
    if unit not in _UNIT_MS:
        raise _fail(source, f"unknown metadata.timeunit {unit!r} (expected one of {', '.join(_UNIT_MS)})")
    scale = _UNIT_MS[unit]
    results = doc.get("results")
    if not isinstance(results, list) or not results:
        raise _fail(source, "'results' must be a non-empty list of results")
    names: list[str] | None = None
    rows: list[tuple[tuple[Any, ...], dict[str, Any], int]] = []
    for i, res in enumerate(results):
        where = f"results[{i}]"
        conf = res.get("configuration") if isinstance(res, dict) else None
        if not isinstance(conf, dict) or not conf:
            raise _fail(source, f"{where}: expected an object with a non-empty 'configuration'")
        if names is None:
            names = list(conf)
        if set(conf) != set(names):
            raise _fail(source, f"{where}: configuration has parameters {sorted(conf)} "
                                f"(expected {sorted(names)}, as in results[0])")
        rows.append((tuple(_scalar(source, where, n, conf[n]) for n in names), res, i))
    assert names is not None
    params = {n: _ordered([r[0][j] for r in rows]) for j, n in enumerate(names)}
    configs = []
    for values, res, i in rows:
        where = f"results[{i}]"
        times = res.get("times") or {}
        if not isinstance(times, dict):
            raise _fail(source, f"{where}: 'times' must be an object")
        compile_ms = _number(times.get("compilation"))
        invalid = str(res.get("invalidity", "correct"))
        samples = _samples(source, where, times.get("runtimes"), scale)
        common = {"values": values, "compile_s": None if compile_ms is None else compile_ms * scale / 1e3,
                  "timestamp": _timestamp(res.get("timestamp"))}
        if invalid == "correct":
            if not samples:
                value = next((_number(m.get("value")) for m in res.get("measurements") or []
                              if isinstance(m, dict) and m.get("name") == "time"), None)
                if value is None or value <= 0:
                    raise _fail(source, f"{where}: a correct result has no runtimes and no time measurement")
                samples = (value * scale,)
            configs.append(Configuration(outcome=MEASURED, samples_ms=samples, **common))
        elif invalid == "constraints":
            configs.append(Configuration(outcome=EXCLUDED, reason="violates the kernel's restrictions", **common))
        else:
            why = next((str(m.get("value")) for m in res.get("measurements") or []
                        if isinstance(m, dict) and isinstance(m.get("value"), str)), "")
            configs.append(Configuration(outcome=FAILED, reason=f"{why or 'failed'} (invalidity: {invalid})", **common))
    return TuningSpace(source=source, format="t4", parameters=params, configurations=tuple(configs),
                       kernel=str(meta.get("kernel_name", "")), device=str(meta.get("device_name", "")),
                       problem_size=meta.get("problem_size"))


def _read_kerneltuner(source: str, doc: dict[str, Any]) -> TuningSpace:
    tune = doc.get("tune_params")
    if not isinstance(tune, dict) or not tune:
        raise _fail(source, "'tune_params' must be a non-empty object of parameter -> list of values")
    keys = doc.get("tune_params_keys") or list(tune)
    if not isinstance(keys, list) or set(keys) != set(tune):
        raise _fail(source, f"'tune_params_keys' {keys!r} must list the parameters of 'tune_params'")
    params: dict[str, tuple[Any, ...]] = {}
    for name in keys:
        values = tune[name]
        if not isinstance(values, list) or not values:
            raise _fail(source, f"tune_params['{name}'] must be a non-empty list of values")
        params[name] = tuple(_scalar(source, f"tune_params['{name}']", name, v) for v in values)
    cache = doc.get("cache")
    if not isinstance(cache, dict) or not cache:
        raise _fail(source, "'cache' must be a non-empty object of 'v1,v2,...' -> entry")
    configs = []
    for key, entry in cache.items():
        where = f"cache['{key}']"
        if not isinstance(entry, dict):
            raise _fail(source, f"{where}: expected an object (got {type(entry).__name__})")
        missing = [n for n in keys if n not in entry]
        if missing:
            raise _fail(source, f"{where}: parameter(s) {', '.join(missing)} missing from the entry")
        values = tuple(_scalar(source, where, n, entry[n]) for n in keys)
        for n, v in zip(keys, values, strict=True):
            if v not in params[n]:
                raise _fail(source, f"{where}: {n}={v!r} is not one of tune_params['{n}']")
        compile_ms = _number(entry.get("compile_time"))
        bench_ms = _number(entry.get("benchmark_time"))
        common = {"values": values, "compile_s": None if compile_ms is None else compile_ms / 1e3,
                  "benchmark_s": None if bench_ms is None else bench_ms / 1e3,
                  "timestamp": _timestamp(entry.get("timestamp"))}
        time = entry.get("time")
        if isinstance(time, str):
            if time == "InvalidConfig":
                configs.append(Configuration(outcome=EXCLUDED, reason=time, **common))
            else:
                configs.append(Configuration(outcome=FAILED, reason=time, **common))
            continue
        t = _number(time)
        if t is None or t <= 0:
            raise _fail(source, f"{where}: 'time' must be a positive number or a failure name (got {time!r})")
        samples = _samples(source, where, entry.get("times"), 1.0) or (t,)
        configs.append(Configuration(outcome=MEASURED, samples_ms=samples, **common))
    return TuningSpace(source=source, format="kerneltuner", parameters=params,
                       configurations=tuple(configs), kernel=str(doc.get("kernel_name", "")),
                       device=str(doc.get("device_name", "")), problem_size=doc.get("problem_size"),
                       objective=str(doc.get("objective", "time")))
