"""Fixtures for the engine tests: a tiny real ONNX model and its dataset, made with onnx.helper."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest


REPO = Path(__file__).resolve().parents[2]
FAULTY = "gptuner_core.testing.faulty_backend:FaultyBackend"


def wait_for(predicate, timeout: float = 60.0, poll_s: float = 0.05) -> bool:
    """Whether ``predicate()`` came true within ``timeout`` seconds, asked every ``poll_s``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(poll_s)
    return False


def make_tiny_model(path: Path, seed: int = 0) -> Path:
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(rng.normal(size=(16, 32)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(size=(32, 4)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Relu", ["h"], ["hr"], name="relu1"),
        helper.make_node("MatMul", ["hr", "w2"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def fresh_launcher():
    """A test that breaks or reconfigures the launcher leaves a new one for the next test."""
    from gptuner_core.engine.process import launcher

    launcher.shutdown()
    yield
    launcher.shutdown()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny.onnx")


@pytest.fixture(scope="session")
def tiny_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(1)
    path = tmp_path_factory.mktemp("tinyds") / "tiny.npz"
    np.savez(path, x=rng.normal(size=(32, 16)).astype(np.float32))
    return path


#: fast measurement settings so engine tests stay quick on 2 cores
QUICK = {"warmup_s": 0.01, "warmup_calls": 2, "min_samples": 10, "max_samples": 60, "max_time_s": 0.5}
