"""Can the TensorRT Global Performance Tuner run here? Each failed check has a precise reason.

Checks, in order (reference ``tensorrt-gpt.md`` §1.1, Torch-TensorRT's ``_capability.py``):

1. ``tensorrt`` importable;
2. version >= 11.1 (the first release with build routes);
3. ``IBuilderConfig.build_route`` and ``IBuilderConfig.all_build_routes`` exist;
4. ``trt.Builder(logger)`` and ``create_builder_config()`` succeed (needs a CUDA device);
5. ``config.all_build_routes`` is non-empty (it is empty on TensorRT-RTX and Windows builds).

:func:`probe_tensorrt` never raises. It takes an ``import_module`` callable so tests can check the
reason strings with a stand-in module object; nothing here builds or runs anything.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


MIN_VERSION: tuple[int, int] = (11, 1)


def parse_version(text: str) -> tuple[int, ...] | None:
    """Leading numeric components of a version string (``"11.1.0.106"`` -> ``(11, 1, 0, 106)``)."""
    match = re.match(r"\s*(\d+(?:\.\d+)*)", str(text))
    if not match:
        return None
    return tuple(int(p) for p in match.group(1).split("."))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeResult:
    """Outcome of the probe; ``module``/``routes_json`` are set only when available."""

    available: bool
    reason: str = ""
    version: str = ""
    routes_json: str = ""
    module: Any = None


def _default_import(name: str) -> Any:
    return importlib.import_module(name)


def probe_tensorrt(
    import_module: Callable[[str], Any] = _default_import,
    *,
    create_builder: bool = True,
) -> ProbeResult:
    """Run the checks above; ``create_builder=False`` stops after the attribute check."""
    try:
        trt = import_module("tensorrt")
    except ImportError as exc:
        return ProbeResult(available=False, reason=f"tensorrt is not importable ({exc})")
    except Exception as exc:  # noqa: BLE001 - a broken install must not crash the CLI
        reason = f"importing tensorrt failed ({type(exc).__name__}: {exc})"
        return ProbeResult(available=False, reason=reason)

    version = str(getattr(trt, "__version__", "") or "")
    parsed = parse_version(version)
    if parsed is None:
        reason = f"cannot read the TensorRT version (expected e.g. '11.1.0', got {version!r})"
        return ProbeResult(available=False, reason=reason, version=version)
    if parsed[:2] < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        reason = (
            f"TensorRT {version} is too old: build routes need TensorRT >= {need} "
            "(the Global Performance Tuner first shipped in 11.1)"
        )
        return ProbeResult(available=False, reason=reason, version=version)

    config_cls = getattr(trt, "IBuilderConfig", None)
    missing = [
        attr for attr in ("build_route", "all_build_routes") if not hasattr(config_cls, attr)
    ]
    if missing:
        reason = (
            f"TensorRT {version} has no IBuilderConfig.{' / IBuilderConfig.'.join(missing)} "
            "(expected an enterprise TensorRT >= 11.1 build with the Global Performance Tuner)"
        )
        return ProbeResult(available=False, reason=reason, version=version)
    if not create_builder:
        return ProbeResult(available=True, version=version, module=trt)

    try:
        logger = trt.Logger(trt.Logger.ERROR)
        builder = trt.Builder(logger)
        if builder is None:
            msg = "trt.Builder returned None"
            raise RuntimeError(msg)
        config = builder.create_builder_config()
        routes = config.all_build_routes
    except Exception as exc:  # noqa: BLE001 - every failure becomes a reason
        reason = (
            f"TensorRT {version}: cannot create a builder ({type(exc).__name__}: {exc}); "
            "a CUDA-capable NVIDIA GPU and driver are required"
        )
        return ProbeResult(available=False, reason=reason, version=version)
    routes = routes if isinstance(routes, str) else str(routes or "")
    if not routes.strip():
        reason = (
            f"TensorRT {version}: IBuilderConfig.all_build_routes is empty; the knob database "
            "ships only with enterprise TensorRT (not TensorRT-RTX, not Windows)"
        )
        return ProbeResult(available=False, reason=reason, version=version)
    return ProbeResult(available=True, version=version, routes_json=routes, module=trt)


def _version_text(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def probe_cuda_python(import_module: Callable[[str], Any] = _default_import) -> str:
    """``""`` when cuda-python's runtime imports *and* the driver can serve it, else the reason.

    A driver older than the CUDA runtime cuda-python was built for imports fine and then fails
    every call with ``cudaErrorInsufficientDriver``; ``cudaDriverGetVersion`` (which reports 0
    without a driver) and ``cudaRuntimeGetVersion`` tell that up front, without a GPU call.
    """
    errors = []
    cudart = None
    for name in ("cuda.bindings.runtime", "cuda.cudart"):
        try:
            cudart = import_module(name)
            break
        except ImportError as exc:
            errors.append(f"{name}: {exc}")
        except Exception as exc:  # noqa: BLE001
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    if cudart is None:
        return "cuda-python is not importable (" + "; ".join(errors) + "); pip install cuda-python"
    try:
        err_d, driver = cudart.cudaDriverGetVersion()
        err_r, runtime = cudart.cudaRuntimeGetVersion()
    except Exception as exc:  # noqa: BLE001 - a broken binding is a reason too
        return f"cuda-python cannot report CUDA versions ({type(exc).__name__}: {exc})"
    if int(getattr(err_d, "value", err_d)) != 0 or int(getattr(err_r, "value", err_r)) != 0:
        return f"cuda-python cannot report CUDA versions (cudaDriverGetVersion: {err_d}, cudaRuntimeGetVersion: {err_r})"
    driver, runtime = int(driver or 0), int(runtime or 0)
    if driver == 0:
        return (
            f"no NVIDIA driver: cudaDriverGetVersion reports 0 (cuda-python is built for CUDA "
            f"{_version_text(runtime)}); install the NVIDIA driver or run on a GPU machine"
        )
    if driver < runtime:
        return (
            f"cuda-python is built for CUDA {_version_text(runtime)}, but the NVIDIA driver supports CUDA "
            f"{_version_text(driver)}: every CUDA call would fail with cudaErrorInsufficientDriver; "
            f"install cuda-python {_version_text(driver).split('.')[0]}.x no newer than the driver "
            f"(e.g. pip install 'cuda-python<={_version_text(driver)}.99') or update the driver"
        )
    return ""
