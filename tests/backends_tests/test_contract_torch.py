"""The shared backend contract, bound to the torch (Inductor) backend on the CPU.

Both model forms are exercised with a tiny Conv+BN+ReLU+Linear model (``tests/data``): the
factory file itself (``torch_tiny_model.py``, meaning ``:factory``) and a ``torch.export`` program
(``.pt2``) exported from it once per session. Builds are real Inductor C++ compiles.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gptuner_core.backends.torch_inductor import TorchInductorBackend
from gptuner_core.testing.backend_contract import BackendContract
from gptuner_core.testing.backend_contract import skip_unless_available


pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow, skip_unless_available(TorchInductorBackend)]

TINY = Path(__file__).resolve().parents[1] / "data" / "torch_tiny_model.py"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location("torch_tiny_model", TINY)
    assert spec is not None and spec.loader is not None
    tiny = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny)
    module, inputs = tiny.factory()
    path = tmp_path_factory.mktemp("torch_export") / "tiny.pt2"
    torch.export.save(torch.export.export(module, inputs), str(path))
    return path


@pytest.fixture(scope="module", params=["exported", "factory"])
def form(request: pytest.FixtureRequest) -> str:
    return request.param


class TestTorchInductorContract(BackendContract):
    @pytest.fixture
    def backend(self) -> TorchInductorBackend:
        return TorchInductorBackend({"device": "cpu", "compile_threads": 1, "threads": 1})

    @pytest.fixture
    def model(self, form: str, exported: Path) -> Path:
        return exported if form == "exported" else TINY

    @pytest.fixture
    def feeds(self) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(0)
        return {"x": rng.standard_normal((4, 1, 6, 6)).astype(np.float32)}

    @pytest.fixture
    def output_names(self) -> list[str]:
        return ["output"]
