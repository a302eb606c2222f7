"""ONNX Runtime backend on models the way real exporters write them.

Paddle-style dynamic dims (``dim_value: -1``, ``'?'``), external-data weights, sequence/map
outputs (ZipMap), nodes inside ``If`` subgraphs, and the canonical artifact identity.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper
from onnx import numpy_helper

from gptuner_core import fingerprint
from gptuner_core.backends.onnxruntime import OnnxRuntimeBackend
from gptuner_core.dataset import synthesize
from gptuner_core.dataset import validate_batch_size
from gptuner_core.errors import BackendError
from gptuner_core.routes import Route
from gptuner_core.testing.backend_contract import skip_unless_available


pytestmark = skip_unless_available(OnnxRuntimeBackend)

ASSETS = Path(__file__).resolve().parents[2] / "assets"
MLP = ASSETS / "mlp_digits.onnx"
CNN = ASSETS / "cnn_digits.onnx"


@pytest.fixture(scope="module")
def backend() -> OnnxRuntimeBackend:
    return OnnxRuntimeBackend()


def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def paddle_like(path: Path) -> Path:
    """x: [-1, 3, '?', '?'] -> Relu -> GlobalAveragePool, as paddle2onnx writes it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1, 3, "?", "?"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 3, 1, 1])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "paddle_like", [x], [y])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


class TestSymbolicDims:
    """Dims are read the way exporters write them."""

    def test_minus_one_and_question_marks_are_dynamic_and_distinct(
        self, backend: OnnxRuntimeBackend, tmp_path: Path
    ) -> None:
        """``-1`` is dynamic, not fixed at -1; two ``'?'`` dims are two distinct symbols."""
        (spec,) = backend.input_specs(paddle_like(tmp_path / "p.onnx"))
        assert spec.shape == (None, 3, None, None)
        validate_batch_size([spec], 4)  # no longer "fixed at -1 (use --batch-size -1)"
        ds = synthesize([spec], 4, dims={})
        assert ds.inputs["x"].shape == (4, 3, 16, 16)

    def test_fixed_batch_message_never_suggests_a_non_positive_size(self) -> None:
        """A fixed first dimension is named in the refusal with the size that fits."""
        from gptuner_core.backends._base import TensorSpec
        from gptuner_core.errors import DatasetError

        with pytest.raises(DatasetError, match=r"fixed at 2 \(use --batch-size 2\)"):
            validate_batch_size([TensorSpec(name="a", dtype="float32", shape=(2, 4))], 3)


def external_copy(src: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model = onnx.load(str(src))
    dst = folder / src.name
    onnx.save_model(
        model, str(dst), save_as_external_data=True, all_tensors_to_one_file=True,
        location=src.stem + ".onnx.data", size_threshold=1024,
    )
    return dst


class TestExternalData:
    """Weights beside the ``.onnx`` file are found from any working directory."""

    def test_knobs_build_and_quantize_outside_the_model_folder(
        self, backend: OnnxRuntimeBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """describe/input_specs/build work when the cwd is not the model's folder."""
        model = external_copy(MLP, tmp_path / "models")
        elsewhere = tmp_path / "cwd"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        db = backend.describe(model)
        assert db.get("-quant:node:/net/net.0/Gemm") is not None
        assert [s.name for s in backend.input_specs(model)] == ["input"]
        feeds = {"input": np.random.default_rng(0).standard_normal((4, 64)).astype(np.float32)}
        for i, route in enumerate(("-ort:graph_optimization_level=all", "-quant:mode=dynamic",
                                   "-fp16:convert=on")):
            result = backend.build(model, Route.parse(route), tmp_path / f"w{i}")
            with backend.load(result) as runner:
                assert runner.infer(feeds)["logits"].shape == (4, 10)

    def test_fingerprint_hashes_the_data_file(self, backend: OnnxRuntimeBackend, tmp_path: Path) -> None:
        """Changing only the ``.data`` bytes changes the model hash; files are listed."""
        model = external_copy(MLP, tmp_path / "m")
        files = backend.model_files(model)
        assert [f.name for f in files] == ["mlp_digits.onnx", "mlp_digits.onnx.data"]
        before = fingerprint.model_sha256(files)
        data = files[1]
        raw = bytearray(data.read_bytes())
        raw[100] ^= 0xFF
        data.write_bytes(bytes(raw))
        assert fingerprint.model_sha256(files) != before
        assert fingerprint.model_sha256([MLP]) == fingerprint.file_sha256(MLP)  # one file: unchanged
        db = backend.describe(model)
        specs = backend.input_specs(model)
        first = fingerprint.compute(model=str(model), backend_name="onnxruntime", backend=backend,
                                    db=db, specs=specs)["model_sha256"]
        raw[200] ^= 0xFF
        data.write_bytes(bytes(raw))
        again = fingerprint.compute(model=str(model), backend_name="onnxruntime", backend=backend,
                                    db=db, specs=specs)["model_sha256"]
        assert first != again

    def test_copy_keeps_the_data_file(self, backend: OnnxRuntimeBackend, tmp_path: Path) -> None:
        """A model copy carries its data file and still loads."""
        model = external_copy(MLP, tmp_path / "m")
        copied = fingerprint.copy_model(backend.model_files(model), tmp_path / "copy")
        assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == [
            "mlp_digits.onnx", "mlp_digits.onnx.data"]
        assert backend.input_specs(copied)[0].name == "input"

    def test_missing_data_file_is_named(self, backend: OnnxRuntimeBackend, tmp_path: Path) -> None:
        """A model whose data file is gone is refused with the file's name."""
        model = external_copy(MLP, tmp_path / "m")
        (tmp_path / "m" / "mlp_digits.onnx.data").unlink()
        with pytest.raises(BackendError, match=r"mlp_digits\.onnx\.data"):
            backend.describe(model)


def zipmap_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])
    label = helper.make_tensor_value_info("label", TensorProto.INT64, [None])
    probs = helper.make_value_info(
        "probabilities",
        helper.make_sequence_type_proto(
            helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, []))
        ),
    )
    nodes = [
        helper.make_node("ArgMax", ["x"], ["label"], axis=1, keepdims=0),
        helper.make_node("ZipMap", ["x"], ["probabilities"], domain="ai.onnx.ml", classlabels_int64s=[0, 1]),
    ]
    graph = helper.make_graph(nodes, "zipmap", [x], [label, probs])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnx.ml", 1)]
    )
    return _save(model, path)


def if_model(path: Path) -> Path:
    """``sr == 16000 ? x @ W1 : x @ W2``: all the compute lives inside ``If`` branches."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "W1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "W2")
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])

    def branch(name: str, w: str) -> onnx.GraphProto:
        yb = helper.make_tensor_value_info(f"y_{name}", TensorProto.FLOAT, [None, 4])
        return helper.make_graph([helper.make_node("MatMul", ["x", w], [f"y_{name}"], name=f"{name}/MatMul")],
                                 name, [], [yb])

    nodes = [
        helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array(16000, np.int64))),
        helper.make_node("Equal", ["sr", "k"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=branch("then", "W1"), else_branch=branch("else", "W2")),
    ]
    graph = helper.make_graph(
        nodes, "if_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 8]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [out], initializer=[w1, w2],
    )
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]), path)


class TestOutputsAndSubgraphs:
    """What ``gptuner knobs`` says about ZipMap outputs and If subgraphs."""

    def test_sequence_output_is_refused_at_knobs_time(self, backend: OnnxRuntimeBackend, tmp_path: Path) -> None:
        """A ZipMap output is named as unsupported, with the re-export hint."""
        with pytest.raises(BackendError, match=r"output 'probabilities' has an unsupported output type seq\(map\(int64,tensor\(float32\)\)\); .*zipmap"):
            backend.describe(zipmap_model(tmp_path / "z.onnx"))

    def test_if_branch_nodes_are_insertion_points(self, backend: OnnxRuntimeBackend, tmp_path: Path) -> None:
        """MatMul nodes inside both If branches get node knobs, and excluding one works."""
        model = if_model(tmp_path / "if.onnx")
        names = [k.name for k in backend.describe(model)]
        assert "-quant:node:then/MatMul" in names
        assert "-quant:node:else/MatMul" in names
        result = backend.build(
            model, Route.parse("-quant:mode=dynamic -quant:node:else/MatMul=off"), tmp_path / "w"
        )
        assert result.info["quantized_nodes"] == ["then/MatMul"]
        feeds = {"x": np.ones((2, 8), np.float32), "sr": np.array(16000, np.int64)}
        with backend.load(result) as runner:
            assert runner.infer(feeds)["y"].shape == (2, 4)


def se_cnn(path: Path, blocks: int = 4, channels: int = 16) -> Path:
    """Conv + squeeze-excite blocks, like PP-OCR's: at level all ORT inserts NCHWc reorders
    whose names come from a counter (the optimized bytes differ from build to build)."""
    rng = np.random.default_rng(0)
    inits, nodes, x, cin = [], [], "x", 3
    for b in range(blocks):
        w = (rng.standard_normal((channels, cin, 3, 3)) * 0.2).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{b}"))
        nodes += [
            helper.make_node("Conv", [x, f"w{b}"], [f"c{b}"], pads=[1, 1, 1, 1], name=f"conv{b}"),
            helper.make_node("Relu", [f"c{b}"], [f"r{b}"]),
            helper.make_node("GlobalAveragePool", [f"r{b}"], [f"g{b}"]),
            helper.make_node("HardSigmoid", [f"g{b}"], [f"h{b}"]),
            helper.make_node("Mul", [f"r{b}", f"h{b}"], [f"m{b}"]),
        ]
        x, cin = f"m{b}", channels
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"]))
    graph = helper.make_graph(
        nodes, "se", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, channels, 1, 1])],
        initializer=inits,
    )
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


class TestArtifactIdentity:
    """The same route gives the same identity even though ORT renames NCHWc nodes."""

    @pytest.mark.parametrize("level", ["disable", "basic", "extended", "layout", "all"])
    def test_default_and_equal_route_share_identity(
        self, backend: OnnxRuntimeBackend, tmp_path: Path, level: str
    ) -> None:
        """Builds of the default route and of a route equal to it: one identity."""
        model = se_cnn(tmp_path / "se.onnx")
        default = backend.build(model, Route.parse(""), tmp_path / "d")
        routes = [f"-ort:graph_optimization_level={level}",
                  f"-ort:graph_optimization_level={level} -ort:inter_op_num_threads=0"]
        ids = {backend.artifact_identity(backend.build(model, Route.parse(r), tmp_path / str(i)))
               for i, r in enumerate(routes)}
        assert len(ids) == 1
        if level == "all":  # the default level
            assert ids == {backend.artifact_identity(default)}
        other = backend.build(model, Route.parse("-ort:intra_op_num_threads=1"), tmp_path / "c")
        assert backend.artifact_identity(other) != backend.artifact_identity(default)


def test_model_files_default_is_the_model(tmp_path: Path) -> None:
    """Backends without data files list just the model path."""
    from gptuner_core.backends._base import Backend

    p = tmp_path / "m.bin"
    p.write_bytes(b"x")
    assert Backend.model_files(None, p) == [p]  # type: ignore[arg-type]
    assert os.fspath(p)


def stateful_model(path: Path) -> Path:
    """silero-like: x [B, 8], state [2, B, 8] (batch on axis 1), sr int64 scalar."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "W")
    zero = numpy_helper.from_array(np.array(0, np.int64), "zero")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"], name="mm"),
        helper.make_node("Gather", ["state", "zero"], ["s0"], axis=0),
        helper.make_node("Add", ["xw", "s0"], ["a"]),
        helper.make_node("Cast", ["sr"], ["srf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["a", "srf"], ["y"]),
        helper.make_node("Identity", ["state"], ["stateN"]),
    ]
    graph = helper.make_graph(
        nodes, "stateful",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 8]),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, None, 8]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8]),
         helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, None, 8])],
        initializer=[w, zero],
    )
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def test_static_calibration_slices_state_along_its_batch_axis(
    backend: OnnxRuntimeBackend, tmp_path: Path
) -> None:
    """Calibration of a stateful model: state is sliced on axis 1 and sr fed whole."""
    from gptuner_core.dataset import synthesize as synth
    from gptuner_core.shapes import input_specs as resolve
    from gptuner_core.shapes import parse_value_ranges

    model = stateful_model(tmp_path / "s.onnx")
    specs = resolve(backend.input_specs(model), value_ranges=parse_value_ranges("sr:1"))
    calib = synth(specs, 40).calibration(40)
    assert calib["state"].shape == (2, 40, 8) and calib["sr"].shape == ()
    result = backend.build(model, Route.parse("-quant:mode=qdq"), tmp_path / "w", calibration=calib)
    assert result.info["quantized_nodes"] == ["mm"]


def test_static_quantization_of_if_branches_says_why(backend: OnnxRuntimeBackend, tmp_path: Path) -> None:
    """ORT's static quantizers skip subgraphs: the failure names the cause and dynamic mode."""
    model = if_model(tmp_path / "if.onnx")
    calib = {"x": np.ones((4, 8), np.float32), "sr": np.array(16000, np.int64)}
    with pytest.raises(BackendError, match=r"inside If/Loop subgraphs.*use -quant:mode=dynamic"):
        backend.build(model, Route.parse("-quant:mode=qdq"), tmp_path / "w", calibration=calib)


def test_planned_identity_skips_equal_routes_before_building(backend: OnnxRuntimeBackend) -> None:
    """Routes that normalize to the default's configuration share a planned identity."""
    default = backend.planned_identity(CNN, Route.parse(""))
    assert backend.planned_identity(CNN, Route.parse("-ort:inter_op_num_threads=2")) == default
    assert backend.planned_identity(CNN, Route.parse("-quant:per_channel=on")) == default
    assert backend.planned_identity(CNN, Route.parse("-ort:intra_op_num_threads=1")) != default

