"""The shared backend contract, bound to the ONNX Runtime backend on both sample models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gptuner_core.backends.onnxruntime import OnnxRuntimeBackend
from gptuner_core.testing.backend_contract import BackendContract
from gptuner_core.testing.backend_contract import skip_unless_available


pytestmark = skip_unless_available(OnnxRuntimeBackend)

ASSETS = Path(__file__).resolve().parents[2] / "assets"


@pytest.fixture(params=["mlp_digits", "cnn_digits"])
def sample(request: pytest.FixtureRequest) -> str:
    return request.param


class TestOnnxRuntimeContract(BackendContract):
    @pytest.fixture
    def backend(self) -> OnnxRuntimeBackend:
        return OnnxRuntimeBackend()

    @pytest.fixture
    def model(self, sample: str) -> Path:
        return ASSETS / f"{sample}.onnx"

    @pytest.fixture
    def feeds(self, sample: str) -> dict[str, np.ndarray]:
        return {"input": np.load(ASSETS / f"{sample}_eval.npz")["input"][:8]}

    @pytest.fixture
    def calibration(self, sample: str) -> dict[str, np.ndarray]:
        return dict(np.load(ASSETS / f"{sample}_calib.npz"))

    @pytest.fixture
    def output_names(self) -> list[str]:
        return ["logits"]
