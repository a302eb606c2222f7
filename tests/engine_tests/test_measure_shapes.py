"""Several shapes per study (issue 'Real models', item 8: "Only one input shape per study, and
latency is measured at the first batch's shape"): each candidate is measured at every
``--measure-shapes`` profile in its own process, per-shape speed-ups and the overall objective
are stored, the verdict names each shape, and the fingerprint holds the measured shapes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gptuner_core.cli import main
from gptuner_core.storage import open_store

from .conftest import QUICK


def _wide_model(path):
    """x [?, 256] -> two 256x256 MatMuls: batch 512 costs far more than batch 1."""
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    ws = [numpy_helper.from_array(rng.normal(size=(256, 256)).astype(np.float32) / 16, f"w{i}") for i in (1, 2)]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
         helper.make_node("Relu", ["h"], ["hr"], name="relu"),
         helper.make_node("MatMul", ["hr", "w2"], ["y"], name="mm2")],
        "wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 256])], ws,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _args(model, dataset, study, *extra):
    return ["tune", str(model), "--backend", "onnxruntime", "--expr",
            "-ort:intra_op_num_threads=[0|1]", "--dataset", str(dataset), "--batch-size", "4",
            "--epsilon", "1e-3", "--drift-every", "0", "--profile-runs", "0",
            "--study", str(study), "--quiet", *extra,
            *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wide")
    ds = tmp / "ds.npz"
    np.savez(ds, x=np.random.default_rng(1).normal(size=(16, 256)).astype(np.float32))
    return _wide_model(tmp / "wide.onnx"), ds


def test_each_candidate_is_measured_at_every_shape(wide, tmp_path, capsys):
    model, ds = wide
    study = tmp_path / "s"
    code = main(_args(model, ds, study, "--measure-shapes", "x:1x256", "--measure-shapes",
                      "x:512x256", "--shape-objective", "minimax"))
    assert code == 0, capsys.readouterr().err
    with np.load(study / "measure_shape_0.npz") as a, np.load(study / "measure_shape_1.npz") as b, \
            np.load(ds) as data:
        assert a["x"].shape == (1, 256) and np.array_equal(a["x"], data["x"][:1])  # the dataset's rows
        assert b["x"].shape == (512, 256)  # more rows than the dataset: synthesized at that shape
    with open_store(study, readonly=True) as store:
        recs = store.candidates(with_samples=True)
        fingerprint = store.fingerprint()
        winner = store.winner()
    assert fingerprint["measured_shapes"] == ["x:1x256", "x:512x256"]
    assert len(recs) == 2
    for rec in recs:
        small, big = rec.extra["shapes"]
        assert (small["label"], big["label"]) == ("x:1x256", "x:512x256")
        assert len(small["samples_ms"]) >= QUICK["min_samples"] <= len(big["samples_ms"])
        # measured at each shape, not at the first batch's: 512 rows cost far more than 1
        assert big["latency"]["median_ms"] > 5 * small["latency"]["median_ms"]
        assert rec.latency.median_ms == small["latency"]["median_ms"]
    other = recs[1]
    assert other.extra["shape_objective"] == "minimax"
    assert other.speedup == pytest.approx(min(sh["speedup"] for sh in other.extra["shapes"]))
    assert other.speedup_ci is not None and all(sh["speedup_ci"] for sh in other.extra["shapes"])
    assert "per shape: x:1x256" in winner.message and "x:512x256" in winner.message


def test_weighted_objective_is_the_traffic_mix(wide, tmp_path):
    model, ds = wide
    study = tmp_path / "s"
    assert main(_args(model, ds, study, "--measure-shapes", "x:1x256", "--measure-shapes",
                      "x:64x256", "--shape-objective", "weighted:9,1",
                      "--revalidate-top-k", "0")) == 0
    with open_store(study, readonly=True) as store:
        default, other = store.candidates(with_samples=True)
    d = [np.median(sh["samples_ms"]) for sh in default.extra["shapes"]]
    c = [np.median(sh["samples_ms"]) for sh in other.extra["shapes"]]
    assert other.speedup == pytest.approx((9 * d[0] + d[1]) / (9 * c[0] + c[1]))
    assert other.extra["shape_objective"] == "weighted:9,1"


@pytest.mark.parametrize(("extra", "needle"), [
    (["--measure-shapes", "x:1x256", "--measure-shapes", "x:2x256", "--shape-objective", "weighted:1"],
     "gives 1 weight(s) for 2 measured shape(s)"),
    (["--measure-shapes", "x:1x256", "--measure-shapes", "x:1x256"], "given twice"),
    (["--measure-shapes", "x:1by256"], "--measure-shapes: shape '1by256' of input 'x'"),
    (["--measure-shapes", "y:1x256"], "not model inputs"),
    (["--measure-shapes", "x:1x128"], "axis 1: fixed at 256"),
])
def test_bad_shapes_are_one_line_and_no_folder(wide, tmp_path, capsys, extra, needle):
    model, ds = wide
    study = tmp_path / "s"
    assert main(_args(model, ds, study, *extra)) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not study.exists()
