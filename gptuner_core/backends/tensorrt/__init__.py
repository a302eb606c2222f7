"""TensorRT >= 11.1 backends: the Python API (``tensorrt``) and a ``trtexec`` driver (``trtexec``).

Registered in :mod:`gptuner_core.backends` as
``gptuner_core.backends.tensorrt:TensorRTBackend`` and ``gptuner_core.backends.tensorrt:TrtexecBackend``.
Importing this package imports neither ``tensorrt`` nor ``cuda``; they load inside methods.
"""

from __future__ import annotations

from gptuner_core.backends.tensorrt.backend import TensorRTBackend
from gptuner_core.backends.tensorrt.trtexec import TrtexecBackend
from gptuner_core.backends.tensorrt.trtexec import follow_tune_run
from gptuner_core.backends.tensorrt.trtexec import probe_trtexec


__all__ = ["TensorRTBackend", "TrtexecBackend", "follow_tune_run", "probe_trtexec"]
