"""Runtime node names ONNX Runtime produces, mapped back to cnn_digits nodes (no runtime needed)."""

from __future__ import annotations

import pytest

from gptuner_core.profiles.origins import OnnxOrigins
from gptuner_core.profiles.origins import core_op

from .conftest import CNN


@pytest.fixture(scope="module")
def origins() -> OnnxOrigins:
    return OnnxOrigins.from_model(CNN)


# (runtime name, runtime op, runtime outputs) -> expected origins; names as ORT 1.32 writes them
CASES = [
    ("/c1/act/Relu_output_0_nchwc", "Conv", (), ("/c1/conv/Conv", "/c1/act/Relu")),
    ("/c2/pool/MaxPool_output_0_nchwc", "MaxPool", (), ("/c2/pool/MaxPool",)),
    ("fused /fc1/Gemm", "FusedGemm", ("/act/Relu_output_0",), ("/fc1/Gemm", "/act/Relu")),
    ("/c1/conv/Conv_quant_token_2", "QLinearConv", (), ("/c1/conv/Conv",)),
    ("/c3/conv/Conv_token_10", "QLinearConv", (), ("/c3/conv/Conv",)),
    ("/c2/pool/MaxPool_token_20", "NhwcMaxPool", (), ("/c2/pool/MaxPool",)),
    ("/c1/conv/Conv_output_0_DequantizeLinear", "DequantizeLinear", (), ("/c1/conv/Conv",)),
    ("/c2/act/Relu_output_0_q", "QuantizeLinear", (), ("/c2/act/Relu",)),
    ("input_QuantizeLinear", "QuantizeLinear", (), ("/c1/conv/Conv",)),
    ("logits_DequantizeLinear", "DequantizeLinear", (), ("/fc2/Gemm",)),
    ("ReorderOutput", "ReorderOutput", ("/c4/pool/MaxPool_output_0",), ("/c4/pool/MaxPool",)),
    ("Transpose_token_13", "Transpose", ("/c4/conv/Conv_output_0_quantized",), ("/c4/conv/Conv",)),
]


@pytest.mark.parametrize(("name", "op", "outputs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_runtime_name_maps_to_source_nodes(origins, name, op, outputs, expected):
    assert origins.resolve(name, op, (), outputs) == expected


def test_unknown_name_maps_to_nothing(origins):
    assert origins.resolve("MemcpyToHost_7", "MemcpyToHost") == ()


@pytest.mark.parametrize(("op", "core"), [("QLinearConv", "Conv"), ("FusedGemm", "Gemm"), ("QGemm", "Gemm"),
                                          ("NhwcMaxPool", "MaxPool"), ("MatMulInteger", "MatMul"),
                                          ("MatMulNBits", "MatMul"), ("Conv", "Conv")])
def test_core_op(op, core):
    assert core_op(op) == core
