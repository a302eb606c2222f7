"""The artifact identity of an external-data model (found by tuning MiniLM end to end).

ONNX Runtime's optimized model keeps the weights it did not change as references into the data
file beside the model it loaded (``minilm.onnx.data``), relative to that model's folder, not the
artifact's. The identity used to load the optimized model from the artifact folder, so every
build of an external-data model failed (BUILD_FAILED, the study could not start).
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from gptuner_core.backends.onnxruntime import OnnxRuntimeBackend
from gptuner_core.routes import Route
from gptuner_core.testing.backend_contract import skip_unless_available


pytestmark = skip_unless_available(OnnxRuntimeBackend)

MLP = Path(__file__).resolve().parents[2] / "assets" / "mlp_digits.onnx"


def test_identity_of_an_external_data_model_reads_the_weights_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "models"
    folder.mkdir()
    model = folder / "mlp.onnx"
    onnx.save_model(onnx.load(str(MLP)), str(model), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="mlp.onnx.data", size_threshold=0)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    backend = OnnxRuntimeBackend()

    def identity(route: str, name: str) -> str | None:
        return backend.artifact_identity(backend.build(model, Route.parse(route), tmp_path / name))

    default = identity("", "a")
    assert default is not None
    assert identity("", "b") == default
    assert identity("-ort:inter_op_num_threads=1", "c") == default  # normalized away: same build
    assert identity("-quant:mode=dynamic", "d") != default
    data = folder / "mlp.onnx.data"
    raw = bytearray(data.read_bytes())
    raw[-4] ^= 0xFF  # other weights, same references: not the same artifact
    data.write_bytes(bytes(raw))
    assert identity("", "e") != default
