"""Real ONNX Runtime builds of the bundled ``cnn_digits`` sample: the default route and INT8 routes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


REPO = Path(__file__).resolve().parents[2]
CNN = REPO / "assets" / "cnn_digits.onnx"
MLP = REPO / "assets" / "mlp_digits.onnx"
#: batch 32: the INT8 kernels' gain is clear there on AVX2/AVX-512 CPUs (SAMPLES.md)
BATCH = 32


def feeds(sample: str = "cnn_digits") -> dict[str, np.ndarray]:
    with np.load(REPO / "assets" / f"{sample}_eval.npz") as data:
        return {"input": data["input"][:BATCH]}


def calibration(sample: str = "cnn_digits") -> dict[str, np.ndarray]:
    with np.load(REPO / "assets" / f"{sample}_calib.npz") as data:
        return {"input": data["input"]}


def build(model: Path, route: str, workdir: Path, sample: str = "cnn_digits"):  # noqa: ANN201
    from gptuner_core.backends import get_backend
    from gptuner_core.routes import Route

    return get_backend("onnxruntime").build(model, Route.parse(route), workdir / "artifact",
                                            calibration=calibration(sample))


@pytest.fixture(scope="session")
def cnn_builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[object, Path]]:
    """route -> (BuildResult, candidate folder) for the default and two INT8 routes."""
    root = tmp_path_factory.mktemp("cnn_builds")
    out = {}
    for i, route in enumerate(["", "-quant:mode=qoperator", "-quant:mode=qdq -quant:reduce_range=on"]):
        folder = root / f"{i:05d}"
        out[route] = (build(CNN, route, folder), folder)
    return out
