"""The shared backend contract, bound to the TensorRT backends.

Marked ``tensorrt`` and ``gpu``: both modules skip here (no TensorRT, no GPU) with the probe's
reason printed by ``pytest -rs``. On a TensorRT >= 11.1 machine they run the whole suite: the
Python-API backend always, the trtexec driver when a trtexec with --tuneBuildRoutes is on PATH.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gptuner_core.backends.tensorrt import TensorRTBackend
from gptuner_core.backends.tensorrt import TrtexecBackend
from gptuner_core.testing.backend_contract import BackendContract
from gptuner_core.testing.backend_contract import skip_unless_available


ASSETS = Path(__file__).resolve().parents[2] / "assets"

pytestmark = [pytest.mark.tensorrt, pytest.mark.gpu]


def _feeds() -> dict[str, np.ndarray]:
    data = np.load(ASSETS / "mlp_digits_eval.npz")
    return {"input": np.ascontiguousarray(data["input"][:4])}


@skip_unless_available(TensorRTBackend)
class TestTensorRTContract(BackendContract):
    @pytest.fixture
    def backend(self) -> TensorRTBackend:
        return TensorRTBackend({"timing_cache": "isolated"})

    @pytest.fixture
    def model(self) -> Path:
        return ASSETS / "mlp_digits.onnx"

    @pytest.fixture
    def feeds(self) -> dict[str, np.ndarray]:
        return _feeds()


@skip_unless_available(TrtexecBackend)
class TestTrtexecContract(BackendContract):
    @pytest.fixture
    def backend(self) -> TrtexecBackend:
        return TrtexecBackend({"timing_cache": "isolated"})

    @pytest.fixture
    def model(self) -> Path:
        return ASSETS / "mlp_digits.onnx"

    @pytest.fixture
    def feeds(self) -> dict[str, np.ndarray]:
        return _feeds()
