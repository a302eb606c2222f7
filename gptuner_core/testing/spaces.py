"""A small brute-forced tuning space written in both T4 and Kernel Tuner cache formats (tests).

Parameters ``a`` = 1|2|4|8, ``b`` = 16|32|64, ``c`` = x|y and ``f`` = 15 (single-valued, not a
knob): a 24-route product. The kernel's restriction ``a * b < 256`` excludes 6 routes: (8, 64, x)
is listed as violating it (T4 ``constraints`` / Kernel Tuner ``InvalidConfig``), the others are
absent. (8, 16, y) fails at run time and (2, 32, y) at compile time; the remaining 16 are
measured with 5 runtimes each; the optimum is (8, 16, x), 4.89x faster than (1, 16, x), the first
configuration.
"""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path
from typing import Any


PARAMS: dict[str, list[Any]] = {"a": [1, 2, 4, 8], "b": [16, 32, 64], "c": ["x", "y"], "f": [15]}
RUNTIME_FAILED = (8, 16, "y")
COMPILE_FAILED = (2, 32, "y")
LISTED_INVALID = (8, 64, "x")


def runtime_ms(a: int, b: int, c: str) -> float:
    return 10.0 / a + b / 16.0 + (0.5 if c == "y" else 0.0)


def configurations() -> list[tuple[tuple[Any, ...], str, list[float], float]]:
    """(values a, b, c, f), outcome ("ok", "runtime", "compile", "constraints"), runtimes, compile ms."""
    out = []
    for a, b, c, f in itertools.product(*PARAMS.values()):
        compile_ms = 500.0 + 100.0 * a
        key = (a, b, c)
        if key == LISTED_INVALID:
            out.append(((a, b, c, f), "constraints", [], 0.0))
        elif a * b >= 256:
            continue
        elif key == RUNTIME_FAILED:
            out.append(((a, b, c, f), "runtime", [], compile_ms))
        elif key == COMPILE_FAILED:
            out.append(((a, b, c, f), "compile", [], compile_ms))
        else:
            t = runtime_ms(a, b, c)
            out.append(((a, b, c, f), "ok", [t * (1 + 0.01 * i) for i in range(5)], compile_ms))
    return out


def t4_document() -> dict[str, Any]:
    results = []
    for values, outcome, runtimes, compile_ms in configurations():
        names = {"ok": "correct", "runtime": "runtime", "compile": "compile", "constraints": "constraints"}
        value: Any = sum(runtimes) / len(runtimes) if runtimes else {
            "runtime": "RuntimeFailedConfig", "compile": "CompilationFailedConfig",
            "constraints": "InvalidConfig"}[outcome]
        times: dict[str, Any] = {"compilation": compile_ms, "framework": 1.0}
        if runtimes:
            times["runtimes"] = runtimes
        results.append({
            "timestamp": "2024-01-02 03:04:05.000000+00:00",
            "configuration": dict(zip(PARAMS, values, strict=True)), "times": times,
            "invalidity": names[outcome], "correctness": int(outcome == "ok"),
            "measurements": [{"name": "time", "value": value, "unit": "miliseconds"}],
            "objectives": ["time"],
        })
    return {"schema_version": "1.0.0", "metadata": {"timeunit": "miliseconds"}, "results": results}


def kerneltuner_document() -> dict[str, Any]:
    cache = {}
    for values, outcome, runtimes, compile_ms in configurations():
        entry: dict[str, Any] = dict(zip(PARAMS, values, strict=True))
        entry["time"] = sum(runtimes) / len(runtimes) if runtimes else {
            "runtime": "RuntimeFailedConfig", "compile": "CompilationFailedConfig",
            "constraints": "InvalidConfig"}[outcome]
        if runtimes:
            entry["times"] = runtimes
        entry.update(compile_time=compile_ms, benchmark_time=10.0, timestamp="2024-01-02 03:04:05+00:00")
        cache[",".join(str(v) for v in values)] = entry
    return {"device_name": "Test GPU", "kernel_name": "test_kernel", "problem_size": [64, 64],
            "tune_params_keys": list(PARAMS), "tune_params": PARAMS, "objective": "time", "cache": cache}


def write_spaces(folder: str | Path) -> tuple[Path, Path]:
    """``space_T4.json`` and ``space.json.gz`` (Kernel Tuner) in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    t4 = folder / "space_T4.json"
    t4.write_text(json.dumps(t4_document()), encoding="utf-8")
    kt = folder / "space.json.gz"
    kt.write_bytes(gzip.compress(json.dumps(kerneltuner_document()).encode()))
    return t4, kt
