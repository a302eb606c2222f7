"""Variants of the bundled sample ``assets/mlp_digits.onnx`` for the pipeline tests, made with
onnx.helper: the same model with a heavy no-op branch (a big MatMul chain on the input whose
result is multiplied by 0 and added to the logits: same outputs, slower), and the same model
with a fixed batch dimension (a changed input shape)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "assets" / "mlp_digits.onnx"
SAMPLE_DATA = REPO / "assets" / "mlp_digits_eval.npz"


def slowed(dst: Path, *, width: int = 2048, src: Path = SAMPLE) -> Path:
    import onnx
    from onnx import helper
    from onnx import numpy_helper

    model = onnx.load(str(src))
    g = model.graph
    x, out = g.input[0].name, g.output[0].name
    n_in = g.input[0].type.tensor_type.shape.dim[1].dim_value
    n_out = g.output[0].type.tensor_type.shape.dim[1].dim_value
    for node in g.node:  # the original logits now feed the Add
        node.output[:] = [f"{out}_orig" if o == out else o for o in node.output]
    rng = np.random.default_rng(0)
    arrays = {
        "slow_wa": rng.normal(size=(n_in, width)), "slow_wb": rng.normal(size=(width, width // 4)),
        "slow_wc": rng.normal(size=(width // 4, n_out)), "slow_zero": np.zeros((1,)),
    }
    g.initializer.extend(numpy_helper.from_array(a.astype(np.float32), k) for k, a in arrays.items())
    g.node.extend([
        helper.make_node("MatMul", [x, "slow_wa"], ["slow_a"], name="slow_a"),
        helper.make_node("MatMul", ["slow_a", "slow_wb"], ["slow_b"], name="slow_b"),
        helper.make_node("MatMul", ["slow_b", "slow_wc"], ["slow_c"], name="slow_c"),
        helper.make_node("Mul", ["slow_c", "slow_zero"], ["slow_z"], name="slow_mul0"),
        helper.make_node("Add", [f"{out}_orig", "slow_z"], [out], name="slow_add"),
    ])
    onnx.save(model, str(dst))
    return dst


def fixed_batch(dst: Path, batch: int, *, src: Path = SAMPLE) -> Path:
    import onnx

    model = onnx.load(str(src))
    for value in (*model.graph.input, *model.graph.output):
        dim = value.type.tensor_type.shape.dim[0]
        dim.ClearField("dim_param")
        dim.dim_value = batch
    onnx.save(model, str(dst))
    return dst


def subset(dst: Path, rows: int, *, src: Path = SAMPLE_DATA) -> Path:
    with np.load(src) as data:
        np.savez(dst, **{k: data[k][:rows] for k in data.files})
    return dst
