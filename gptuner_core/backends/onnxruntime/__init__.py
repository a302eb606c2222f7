"""ONNX Runtime CPU backend (the embedded default): registry path
``gptuner_core.backends.onnxruntime:OnnxRuntimeBackend``.

Importing this package does not import onnxruntime; the backend imports it inside its methods.
"""

from __future__ import annotations

from gptuner_core.backends.onnxruntime.backend import OnnxRuntimeBackend


__all__ = ["OnnxRuntimeBackend"]
