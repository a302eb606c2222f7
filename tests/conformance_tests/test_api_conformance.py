"""Every TensorRT and cuda-python name the backend uses, checked against the real 11.1-11.4 wheels.

The real ``tensorrt-cu13-bindings`` 11.1/11.2/11.3/11.4 and ``tensorrt-cu12-bindings`` 11.4 wheels
are imported against empty stand-in ``libnvinfer*.so.11`` built here (see ``wheels.py``), so
pybind11 reports each class, property, method and enum with its real signature. The uses come
from the backend's source and the generated repro snippet (``api_usage.py``): each must exist,
properties must be writable where we assign them, and every call must fit one real overload. The
used subset is kept in ``tests/data/trt_api_golden.json``, so a new TensorRT release shows up as a
diff (regenerate with ``GPTUNER_UPDATE_GOLDEN=1``). 11.0 has no ``build_route``: the same check
must fail on it. cuda-python runtime calls are checked on cuda-bindings 12.9 and 13.0, without a
GPU. Nothing here builds or runs anything on TensorRT.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import api_usage
import pytest
import wheels


pytestmark = pytest.mark.conformance

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GOLDEN = ROOT / "tests" / "data" / "trt_api_golden.json"
ASSIGNED = {"IBuilderConfig.build_route", "IBuilderConfig.builder_optimization_level", "IBuilderConfig.profiling_verbosity"}


def _env(kind: str, dist: str, version: str) -> dict[str, str]:
    try:
        env = wheels.trt_env(dist, version) if kind == "trt" else wheels.cuda_env(dist, version)
    except wheels.Unavailable as exc:
        pytest.skip(str(exc))
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(ROOT)])
    return env


def _dump(env: dict[str, str], module: str, chains: list[str]) -> dict[str, Any]:
    res = subprocess.run([sys.executable, str(HERE / "api_dump.py"), module], input=json.dumps(chains),
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


def _params(sig: str) -> list[tuple[str, bool]] | None:
    """``name(self: T, a: X = 1) -> R`` -> ``[("a", True)]`` (name, has default); None for ``(*args, **kwargs)``."""
    inner = sig[sig.index("(") + 1 :]
    depth, cur, parts = 0, "", []
    for ch in inner:
        if ch in "([<{":
            depth += 1
        elif ch in ")]>}":
            if depth == 0:
                break
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    out = []
    for p in (x.strip() for x in parts):
        if not p or p.split(":")[0].strip() == "self":
            continue
        if p.startswith("*"):
            return None
        head = p.split("=")[0].split(":")[0].strip()
        out.append((head.split()[-1], "=" in p))
    return out


def fits(call: tuple[int, tuple[str, ...]], signatures: list[str], explicit_self: bool = False) -> bool:
    n, kws = call
    if explicit_self:
        n -= 1
    for sig in signatures:
        params = _params(sig)
        if params is None:
            continue
        names = [p for p, _ in params]
        required = sum(1 for _, d in params if not d)
        if n <= len(params) and n + len(kws) >= required and all(k in names[n:] for k in kws):
            return True
    return False


def problems(uses: list[api_usage.Use], dump: dict[str, Any]) -> list[str]:
    out = []
    for use in uses:
        info = dump["api"].get(use.chain, {"kind": "missing"})
        if info["kind"] == "missing":
            out.append(f"{use.chain}: missing ({use.where})")
            continue
        if use.chain in ASSIGNED and info["kind"] == "property" and not info["writable"]:
            out.append(f"{use.chain}: read-only property, but assigned ({use.where})")
        if use.call is not None:
            sigs = info.get("signatures") or []
            if info["kind"] not in ("class", "method", "function") or not fits(use.call, sigs, use.chain.endswith("__init__")):
                out.append(f"{use.chain}: call with {use.call[0]} positional {list(use.call[1])} fits no signature {sigs} ({use.where})")
    return sorted(set(out))


def trt_uses() -> list[api_usage.Use]:
    return api_usage.backend_uses() + api_usage.snippet_uses()


_DUMPS: dict[tuple[str, str], dict[str, Any]] = {}


def trt_dump(dist: str, version: str) -> dict[str, Any]:
    if (dist, version) not in _DUMPS:
        _DUMPS[dist, version] = _dump(_env("trt", dist, version), "tensorrt_bindings", api_usage.chains(trt_uses()))
    return _DUMPS[dist, version]


@pytest.mark.parametrize(("dist", "version"), wheels.TRT_WHEELS, ids=[f"{d}-{v}" for d, v in wheels.TRT_WHEELS])
def test_backend_and_snippet_conform(dist: str, version: str) -> None:
    """Every class, property, method and enum used exists and every call fits a real signature."""
    dump = trt_dump(dist, version)
    assert dump["version"] == version
    assert problems(trt_uses(), dump) == []


def test_golden_api_subset() -> None:
    """The used subset, as the five real wheels describe it, equals the golden file."""
    got = {f"{d}=={v}": trt_dump(d, v)["api"] for d, v in wheels.TRT_WHEELS}
    if os.environ.get("GPTUNER_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(want)
    for key in got:
        changed = {c for c in set(got[key]) | set(want[key]) if got[key].get(c) != want[key].get(c)}
        assert not changed, f"{key}: the used API changed for {sorted(changed)}; review, then GPTUNER_UPDATE_GOLDEN=1"


def test_fails_on_11_0() -> None:
    """TensorRT 11.0 has no build routes: the same check reports exactly that."""
    dist, version = wheels.TRT_TOO_OLD
    found = problems(trt_uses(), _dump(_env("trt", dist, version), "tensorrt_bindings", api_usage.chains(trt_uses())))
    assert found
    assert any(p.startswith("IBuilderConfig.build_route: missing") for p in found)
    assert any(p.startswith("IBuilderConfig.all_build_routes: missing") for p in found)


PROBE = """
import importlib, json
from gptuner_core.backends.tensorrt.probe import probe_tensorrt
res = probe_tensorrt(lambda name: importlib.import_module("tensorrt_bindings"), create_builder=False)
print(json.dumps({"available": res.available, "reason": res.reason, "version": res.version}))
"""


@pytest.mark.parametrize(("dist", "version", "ok"), [(*wheels.TRT_WHEELS[0], True), (*wheels.TRT_TOO_OLD, False)],
                         ids=["11.1", "11.0"])
def test_probe_on_the_real_module(dist: str, version: str, ok: bool) -> None:
    """The probe's attribute checks run against the real bindings (no builder: that needs a GPU)."""
    res = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=_env("trt", dist, version), timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout)
    assert got["available"] is ok and got["version"] == version
    if not ok:
        assert "TensorRT 11.0.0.114 is too old: build routes need TensorRT >= 11.1" in got["reason"]


@pytest.mark.parametrize(("dist", "version"), wheels.CUDA_WHEELS, ids=[v for _, v in wheels.CUDA_WHEELS])
def test_cuda_runtime_calls_conform(dist: str, version: str) -> None:
    """Every cuda-python runtime function, enum and flag the runner and probe use exists; calls fit."""
    uses = api_usage.cuda_uses()
    dump = _dump(_env("cuda", dist, version), "cuda.bindings.runtime", api_usage.chains(uses))
    assert problems(uses, dump) == []


CUDA_PROBE = """
from gptuner_core.backends.tensorrt.probe import probe_cuda_python
print(probe_cuda_python())
"""


@pytest.mark.parametrize(("dist", "version"), wheels.CUDA_WHEELS, ids=[v for _, v in wheels.CUDA_WHEELS])
def test_cuda_probe_on_the_real_bindings(dist: str, version: str) -> None:
    """Without an NVIDIA driver the real cuda-python imports, and the probe says there is no driver (defect 12)."""
    if Path("/dev/nvidiactl").exists():
        pytest.skip("an NVIDIA driver is present; this checks the driver-less path")
    res = subprocess.run([sys.executable, "-c", CUDA_PROBE], capture_output=True, text=True, env=_env("cuda", dist, version), timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    major = version.split(".")[0]
    assert re.match(rf"no NVIDIA driver: cudaDriverGetVersion reports 0 \(cuda-python is built for CUDA {major}\.\d+\)", res.stdout)


def test_no_tensorrt_call_escapes_the_scan() -> None:
    """Every call of a TensorRT method name in the backend goes through a known TensorRT object."""
    golden = json.loads(GOLDEN.read_text())
    names = {c.split(".")[-1] for api in golden.values() for c, d in api.items() if d["kind"] == "method"}
    assert api_usage.unmapped_receivers(names - {"__init__"}) == []
