"""Lazy, name-keyed backend registry.

Backends are imported on first use, so ``import gptuner_core.backends`` never pulls in
onnxruntime, tensorrt or torch. ``available_backends()`` lists every backend with the precise
reason it cannot run here (``tensorrt: unavailable (No module named 'tensorrt')``).
"""

from __future__ import annotations

from typing import Any

from gptuner_core.backends._base import Availability
from gptuner_core.backends._base import Backend
from gptuner_core.backends._base import BuildResult
from gptuner_core.backends._base import Runner
from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import BackendUnavailableError
from gptuner_core.errors import ConfigError
from gptuner_core.registry import load_registered


#: name -> "module:Class"; the first available of DEFAULT_ORDER is the default backend.
_BACKENDS: dict[str, str] = {
    "tensorrt": "gptuner_core.backends.tensorrt:TensorRTBackend",
    "trtexec": "gptuner_core.backends.tensorrt:TrtexecBackend",
    "onnxruntime": "gptuner_core.backends.onnxruntime:OnnxRuntimeBackend",
    "torch": "gptuner_core.backends.torch_inductor:TorchInductorBackend",
    "replay": "gptuner_core.backends.recording:RecordingBackend",
}
DEFAULT_ORDER = ("tensorrt", "onnxruntime")


def backend_names() -> list[str]:
    return list(_BACKENDS)


def backend_class(name: str) -> type[Backend]:
    """Import and return the backend class registered as ``name``."""
    return load_registered(
        _BACKENDS, name, kind="backend", unknown=ConfigError, unavailable=BackendUnavailableError
    )


def availability(name: str) -> Availability:
    """Availability of one backend; never raises."""
    try:
        return backend_class(name).availability()
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        return Availability(available=False, reason=str(exc))


def available_backends() -> list[tuple[str, Availability]]:
    """Every registered backend with its availability (for the CLI and the dashboard)."""
    return [(name, availability(name)) for name in _BACKENDS]


def default_backend_name() -> str:
    """TensorRT when it can run here, else ONNX Runtime (the embedded default)."""
    for name in DEFAULT_ORDER:
        if availability(name).available:
            return name
    return "onnxruntime"


def default_backend_notice() -> str:
    """One line saying which backend is the default and why."""
    name = default_backend_name()
    if name == "tensorrt":
        return "default backend: tensorrt"
    reason = availability("tensorrt").reason or "not available"
    return f"default backend: onnxruntime (TensorRT unavailable: {reason})"


def get_backend(name: str, options: dict[str, Any] | None = None) -> Backend:
    """Instantiate a backend, raising BackendUnavailableError with the reason if it cannot run."""
    cls = backend_class(name)
    avail = cls.availability()
    if not avail.available:
        msg = f"backend '{name}' is unavailable here: {avail.reason}"
        raise BackendUnavailableError(msg)
    return cls(options)


def load_backend(spec: str, options: dict[str, Any] | None = None) -> Backend:
    """A registry name, or ``module:Class`` for a backend outside the registry."""
    if ":" in spec:
        from gptuner_core.registry import import_target

        try:
            cls = import_target(spec)
        except (ImportError, AttributeError, ValueError) as exc:
            msg = f"--backend '{spec}' cannot be imported (expected module:Class of a Backend; {exc})"
            raise ConfigError(msg) from None
        if not (isinstance(cls, type) and issubclass(cls, Backend)):
            kind = f"class {cls.__name__}" if isinstance(cls, type) else type(cls).__name__
            msg = (f"--backend '{spec}' is not a backend (expected module:Class naming a subclass of "
                   f"gptuner_core.backends.Backend; found a {kind})")
            raise ConfigError(msg)
        return cls(options or {})
    return get_backend(spec, options or {})


__all__ = [
    "Availability",
    "Backend",
    "BuildResult",
    "Runner",
    "TensorSpec",
    "available_backends",
    "backend_class",
    "backend_names",
    "default_backend_name",
    "default_backend_notice",
    "get_backend",
    "load_backend",
]
