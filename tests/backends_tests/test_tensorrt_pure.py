"""Pure parts of the TensorRT backend, tested without TensorRT or a GPU.

Nothing here builds or runs an engine. The probe tests use stand-in module objects only to check
the *reason strings* of each failed check; inspector fixtures are written from the documented
schema (reference §6 and TensorRT's 10.x -> 11.x IEngineInspector migration page).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper
from onnx import numpy_helper

from gptuner_core.backends.tensorrt import TensorRTBackend
from gptuner_core.backends.tensorrt import inspector
from gptuner_core.backends.tensorrt import knob_cache
from gptuner_core.backends.tensorrt import timing_cache
from gptuner_core.backends.tensorrt import trtexec_protocol as proto
from gptuner_core.backends.tensorrt.backend import with_own_knobs
from gptuner_core.backends.tensorrt.build import BuildOptions
from gptuner_core.backends.tensorrt.build import Profile
from gptuner_core.backends.tensorrt.build import onnx_input_specs
from gptuner_core.backends.tensorrt.build import parse_profiles
from gptuner_core.backends.tensorrt.build import resolve_profiles
from gptuner_core.backends.tensorrt.build import shared_cache_path
from gptuner_core.backends.tensorrt.precision import apply_precision
from gptuner_core.backends.tensorrt.probe import parse_version
from gptuner_core.backends.tensorrt.probe import probe_cuda_python
from gptuner_core.backends.tensorrt.probe import probe_tensorrt
from gptuner_core.backends.tensorrt.repro import python_snippet
from gptuner_core.backends.tensorrt.repro import repro_commands
from gptuner_core.backends.tensorrt.repro import trtexec_argv
from gptuner_core.backends.tensorrt.route_check import check_readback
from gptuner_core.backends.tensorrt.route_check import split_route
from gptuner_core.backends.tensorrt.route_check import validate_route
from gptuner_core.backends.tensorrt.runner import cuda_call
from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError
from gptuner_core.errors import InvalidRouteError
from gptuner_core.errors import KnobDatabaseError
from gptuner_core.knobs import KnobDatabase
from gptuner_core.records import CandidateState
from gptuner_core.routes import Route


DATA = Path(__file__).resolve().parents[1] / "data"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def db() -> KnobDatabase:
    return KnobDatabase.from_file(DATA / "trt_knobs_small.json")


# -- route validation -------------------------------------------------------------------------
class TestRouteValidation:
    def test_valid(self, db: KnobDatabase) -> None:
        """Listed values and integer values of int knobs pass."""
        validate_route(Route.parse("-conv_use_long_w=off -kgen:tiling=2 -cask_fusion:num_tactics=12"), db)

    @pytest.mark.parametrize(
        ("route", "message"),
        [
            ("-nope=1", "Unknown knob: -nope"),
            ("-kgen:tiling=7", "Invalid value for knob: -kgen:tiling=7 (allowed: [0|1|2])"),
            ("-cask_fusion:num_tactics=int32_t", "Unbounded expression 'int32_t' not allowed"),
            ("-cask_fusion:num_tactics=many", "expected an integer, knob type int32_t"),
        ],
    )
    def test_invalid(self, db: KnobDatabase, route: str, message: str) -> None:
        """Each bad route is refused with trtexec's wording before TensorRT sees it."""
        with pytest.raises(InvalidRouteError) as info:
            validate_route(Route.parse(route), db)
        assert message in str(info.value)

    def test_readback(self) -> None:
        """The effective route is what the config reads back; order does not matter."""
        assert check_readback(Route.parse("-a=1 -b=2"), "-b=2  -a=1").effective == "-b=2 -a=1"
        assert check_readback(Route(), "").effective == ""

    def test_readback_ignored(self) -> None:
        """A route TensorRT silently dropped raises, naming both sides."""
        with pytest.raises(BackendError, match=r"dropped -a=1.*requested '-a=1', config.build_route reads back ''"):
            check_readback(Route.parse("-a=1"), "")

    def test_split(self) -> None:
        """gptuner's own knobs are split off before the route reaches TensorRT."""
        trt, own = split_route(Route.parse("-a=1 -gptuner:precision=fp16 -b=2"), "-gptuner:")
        assert str(trt) == "-a=1 -b=2" and str(own) == "-gptuner:precision=fp16"

    def test_own_knobs_appended(self, db: KnobDatabase) -> None:
        """describe() = TensorRT's knobs in order, then the precision knob."""
        full = with_own_knobs(db)
        assert [k.name for k in full.knobs[: len(db)]] == [k.name for k in db]
        assert full.knobs[-1].name == "-gptuner:precision" and full.knobs[-1].default == "fp32"


# -- knob cache -------------------------------------------------------------------------------
class TestKnobCache:
    def test_fetch_once(self, tmp_path: Path) -> None:
        """The first call fetches and stores; later calls read the file."""
        text = (DATA / "trt_knobs_small.json").read_text()
        calls = []

        def fetch() -> str:
            calls.append(1)
            return text

        a = knob_cache.knob_database("11.1.0.106", fetch, root=tmp_path)
        b = knob_cache.knob_database("11.1.0.106", fetch, root=tmp_path)
        assert a == b and len(calls) == 1
        assert (tmp_path / "11.1.0.106" / "2.19.45.json").read_text() == text
        knob_cache.knob_database("11.1.0.106", fetch, root=tmp_path, refresh=True)
        assert len(calls) == 2

    def test_versions_apart_and_sanitized(self, tmp_path: Path) -> None:
        """Each TensorRT version has its own folder; path tricks in versions are neutralized."""
        text = (DATA / "trt_knobs_small.json").read_text()
        path = knob_cache.store("../../evil", text, root=tmp_path)
        assert tmp_path in path.parents
        assert knob_cache.load_cached("11.2.0", root=tmp_path) is None

    def test_bad_json(self, tmp_path: Path) -> None:
        """A broken database string is refused and nothing is cached."""
        with pytest.raises(KnobDatabaseError, match="not valid JSON"):
            knob_cache.store("11.1.0", "{oops", root=tmp_path)
        assert knob_cache.load_cached("11.1.0", root=tmp_path) is None


# -- probe reasons ----------------------------------------------------------------------------
def _trt_module(version: str = "11.1.0.106", *, routes: str = '{"tuner_options": []}', attrs: bool = True, builder_error: Exception | None = None) -> types.SimpleNamespace:
    class Config:
        pass

    if attrs:
        Config.build_route = ""
        Config.all_build_routes = ""

    class Logger:
        ERROR = 1

        def __init__(self, severity: int) -> None:
            pass

    def builder(logger: object) -> object:
        if builder_error is not None:
            raise builder_error
        return types.SimpleNamespace(create_builder_config=lambda: types.SimpleNamespace(all_build_routes=routes))

    return types.SimpleNamespace(__version__=version, IBuilderConfig=Config, Logger=Logger, Builder=builder)


def _importer(mod: object):  # noqa: ANN202
    def imp(name: str) -> object:
        if isinstance(mod, Exception):
            raise mod
        return mod

    return imp


class TestProbeReasons:
    def test_not_installed(self) -> None:
        """Here, with no TensorRT, the backend says so."""
        avail = TensorRTBackend.availability()
        assert not avail.available and avail.reason.startswith("tensorrt is not importable")

    @pytest.mark.parametrize(
        ("module", "reason"),
        [
            (ImportError("libnvinfer.so.11: cannot open shared object file"), "tensorrt is not importable (libnvinfer.so.11"),
            (_trt_module("10.13.2"), "TensorRT 10.13.2 is too old: build routes need TensorRT >= 11.1"),
            (_trt_module("garbage"), "cannot read the TensorRT version"),
            (_trt_module(attrs=False), "has no IBuilderConfig.build_route / IBuilderConfig.all_build_routes"),
            (_trt_module(builder_error=RuntimeError("CUDA initialization failure with error: 100")), "cannot create a builder (RuntimeError: CUDA initialization failure"),
            (_trt_module(routes="  "), "all_build_routes is empty"),
        ],
        ids=["import", "old", "unparsable-version", "no-attrs", "no-gpu", "rtx"],
    )
    def test_reasons(self, module: object, reason: str) -> None:
        """Every failed check has its own precise reason."""
        res = probe_tensorrt(_importer(module))
        assert not res.available
        assert reason in res.reason

    def test_available(self) -> None:
        """All checks passing returns the knob JSON for the cache."""
        res = probe_tensorrt(_importer(_trt_module(routes='{"tuner_version": "2.19.45"}')))
        assert res.available and res.version == "11.1.0.106" and "2.19.45" in res.routes_json

    def test_versions(self) -> None:
        assert parse_version("11.1.0.106") == (11, 1, 0, 106)
        assert parse_version("11.10.1a") == (11, 10, 1)
        assert parse_version("dev") is None

    def test_cuda_python_reason(self) -> None:
        """Missing cuda-python is named with the install hint."""
        reason = probe_cuda_python(_importer(ImportError("No module named 'cuda'")))
        assert "cuda-python is not importable" in reason and "pip install cuda-python" in reason


# -- engine inspector JSON --------------------------------------------------------------------
TRT11_ENGINE = {
    "Layers": [
        {
            "Name": "/conv1/Conv + /relu1/Relu",
            "LayerType": "CaskConvolution",
            "Inputs": [{"Name": "input", "Location": "Device", "Dimensions": [1, 3, 224, 224], "Format": "Row major linear FP16 format (kLINEAR)", "DataType": "Half"}],
            "Outputs": [{"Name": "/relu1/Relu_output_0", "Location": "Device", "Dimensions": [1, 64, 112, 112], "Format": "Channel major FP16 format where channel % 8 == 0 (kHWC8)", "DataType": "Half"}],
            "ParameterType": "Convolution",
            "TacticName": "sm90_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_tilesize128x64x64",
            "TacticValue": "0x9f4e21c0a6a1b5f2",
            "StreamId": 0,
            "Metadata": "[ONNX Layer: /conv1/Conv]\u001e[ONNX Layer: /relu1/Relu]",
        },
        {
            "Name": "/fc/Gemm",
            "LayerType": "gemm",
            "Inputs": [{"Name": "/flatten/Flatten_output_0", "Location": "Device", "Dimensions": [1, 512], "Format": "Row major linear INT8 format (kLINEAR)", "DataType": "Int8"}],
            "Outputs": [{"Name": "output", "Location": "Device", "Dimensions": [1, 1000], "Format": "Row major linear FP32 format (kLINEAR)", "DataType": "Float"}],
            "TacticValue": "0x0000000000000003",
        },
    ],
    "I/O Tensors": [
        {"Name": "input", "IOMode": "Input", "DataType": "Float", "Dimensions": [-1, 3, 224, 224], "Location": "Device", "IsShapeInferenceIO": False,
         "ProfileInfo": [{"MinShape": [1, 3, 224, 224], "OptShape": [8, 3, 224, 224], "MaxShape": [32, 3, 224, 224], "Format": "Row major linear FP32 format (kLINEAR)"}]},
        {"Name": "output", "IOMode": "Output", "DataType": "Float", "Dimensions": [-1, 1000], "Location": "Device", "IsShapeInferenceIO": False},
    ],
}
TRT10_ENGINE = {
    "Layers": [
        {"Name": "node_of_out", "LayerType": "Reformat",
         "Inputs": [{"Name": "x", "Location": "Device", "Dimensions": [1, 4], "Format/Datatype": "Row major linear FP32"}],
         "Outputs": [{"Name": "out", "Location": "Device", "Dimensions": [1, 4], "Format/Datatype": "Row major linear FP16 format"}],
         "TacticValue": "0x0000000000000000"},
    ],
    "Bindings": ["x", "out"],
}


class TestInspector:
    def test_trt11(self) -> None:
        """TensorRT 11 schema: separate DataType, 'I/O Tensors' with profiles."""
        info = inspector.parse_engine_information(json.dumps(TRT11_ENGINE))
        assert info.schema == "trt11"
        conv, fc = info.layers
        assert (conv.layer_type, conv.precision) == ("CaskConvolution", "FP16")
        assert conv.tactic.startswith("sm90_xmma_fprop")
        assert conv.outputs[0].dims == (1, 64, 112, 112)
        assert fc.precision == "FP32" and fc.tactic == "0x0000000000000003"
        inp = info.io_tensors[0]
        assert (inp.name, inp.mode, inp.dims) == ("input", "Input", (-1, 3, 224, 224))
        assert inp.profiles[0]["opt"] == [8, 3, 224, 224]
        assert info.summary() == {"num_layers": 2, "by_precision": {"FP16": 1, "FP32": 1}, "by_type": {"CaskConvolution": 1, "gemm": 1}, "schema": "trt11"}

    def test_trt10(self) -> None:
        """TensorRT 10 schema: 'Format/Datatype' strings and a 'Bindings' name list."""
        info = inspector.parse_engine_information(json.dumps(TRT10_ENGINE))
        assert info.schema == "trt10"
        assert info.layers[0].precision == "FP16"
        assert [t.name for t in info.io_tensors] == ["x", "out"]

    def test_names_only_and_single_layer(self) -> None:
        """LAYER_NAMES_ONLY layers are strings; get_layer_information returns one layer."""
        info = inspector.parse_engine_information(json.dumps({"Layers": ["a", "b"], "Bindings": []}))
        assert [x.name for x in info.layers] == ["a", "b"] and info.layers[0].precision == ""
        one = inspector.parse_layer_information(json.dumps(TRT11_ENGINE["Layers"][1]))
        assert one.name == "/fc/Gemm"
        assert inspector.layers_from_parts([json.dumps(x) for x in TRT11_ENGINE["Layers"]]).summary()["num_layers"] == 2

    @pytest.mark.parametrize(("text", "precision"), [("BFloat16", "BF16"), ("FP8", "FP8"), ("Int32", "INT32"), ("Bool", "BOOL"), ("weird", "")])
    def test_precisions(self, text: str, precision: str) -> None:
        assert inspector.normalize_precision(text) == precision

    def test_bad(self) -> None:
        with pytest.raises(BackendError, match="not valid JSON"):
            inspector.parse_engine_information("{")
        with pytest.raises(BackendError, match="'Layers' must be a list"):
            inspector.parse_engine_information('{"Layers": 3}')


# -- result file, classification, log lines --------------------------------------------------
class TestResultAndClassification:
    def test_parse(self) -> None:
        res = proto.parse_result('{\n  "gpu_time_ms": 0.02836,\n  "accuracy_failed": false,\n  "accuracy_loss": {"out": 0.0}\n}')
        assert res.gpu_time_ms == 0.02836 and res.accuracy_loss == {"out": 0.0}

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('{"gpu_time_ms": "1"}', "'gpu_time_ms' must be a number"),
            ('{"gpu_time_ms": 1, "accuracy_failed": 1}', "'accuracy_failed' must be true or false"),
            ('{"gpu_time_ms": 1, "accuracy_loss": {"o": "x"}}', "'accuracy_loss' must map tensor names to numbers"),
            ("[]", "expected a JSON object"),
        ],
    )
    def test_parse_errors(self, text: str, message: str) -> None:
        with pytest.raises(BackendError, match=message):
            proto.parse_result(text)

    def test_classify(self, tmp_path: Path) -> None:
        """The parent's rules: signal, missing, unparsable, non-zero with result, success."""
        res = tmp_path / "r.json"
        sig = proto.classify(-6, res)
        assert (sig.state, sig.crashed, sig.message) == (CandidateState.CRASHED, True, "child killed by signal 6 (Aborted)")
        missing = proto.classify(1, res)
        assert missing.message == f"missing tuning result file {res} (child likely crashed before writing)"
        res.write_text('{"gpu_time_ms": 0.3, "accuracy_failed": true, "accuracy_loss": {"y": 0.2}}')
        acc = proto.classify(1, res)
        assert (acc.state, acc.crashed, acc.message) == (CandidateState.ACCURACY_FAILED, False, "child exited with status 1")
        res.write_text('{"gpu_time_ms": 0.3, "accuracy_failed": false}')
        assert proto.classify(0, res).ok
        assert proto.classify(2, res).state is CandidateState.CRASHED
        assert proto.classify(None, res, timed_out_s=5).state is CandidateState.TIMED_OUT

    def test_log(self) -> None:
        """TASK banners, accuracy lines, best iteration and summary are extracted."""
        text = "\n".join(
            [
                "[08/20/2026-10:00:00] [I] Tuning phase1: 2 iterations.",
                "&&&& TASK_BEGIN [iter=0] BuildRoute = '-a=on -b=1'",
                "[08/20/2026-10:00:01] [I] Using tuning build route: -a=on -b=1",
                "[08/20/2026-10:00:02] [I] Accuracy loss for tensor logits (L0): 0.000000",
                "[08/20/2026-10:00:02] [I] Accuracy loss for tensor probs:0 (LInf): 0.012500 [FAIL: >= threshold 0.001000]",
                "[08/20/2026-10:00:02] [E] Accuracy validation FAILED: one or more tensors exceeded the threshold.",
                "&&&& TASK_ABORT [iter=0] BuildRoute = '-a=on -b=1'",
                "[08/20/2026-10:00:03] [W] Iteration [0] failed: child exited with status 1",
                "&&&& TASK_END [iter=1] BuildRoute = '-a=off -b=1'",
                "[08/20/2026-10:00:04] [I] Best iteration: -a=off -b=1 (gpu_time_ms=0.02836)",
                "[08/20/2026-10:00:04] [I] Tuning summary: 1 / 2 iterations succeeded.",
            ]
        )
        s = proto.parse_log(text)
        assert [(t.kind, t.iter) for t in s.tasks] == [("TASK_BEGIN", 0), ("TASK_ABORT", 0), ("TASK_END", 1)]
        assert s.tasks[0].route == "-a=on -b=1"
        assert s.accuracy[0].failed is False and s.accuracy[1].tensor == "probs:0"
        assert (s.accuracy[1].algorithm, s.accuracy[1].loss, s.accuracy[1].threshold) == ("LInf", 0.0125, 0.001)
        assert s.accuracy_failed and s.requested_route_echo == "-a=on -b=1"
        assert (s.best_route, s.best_gpu_time_ms, s.succeeded, s.total) == ("-a=off -b=1", 0.02836, 1, 2)
        assert s.iteration_failures == ((0, "child exited with status 1"),)

    def test_banner_and_json(self) -> None:
        assert proto.version_from_banner("&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106]") == "11.1.0"
        assert proto.version_from_banner("nothing") == ""
        assert proto.json_from_output('[I] x\n{"a": {"b": 1}}\n&&&& PASSED') == '{"a": {"b": 1}}'
        with pytest.raises(BackendError, match="no JSON object"):
            proto.json_from_output("[E] failed")


# -- command construction and repro -----------------------------------------------------------
class TestCommands:
    def test_child_argv(self, tmp_path: Path) -> None:
        """The candidate child is an argv list with the route as one element."""
        argv = proto.child_argv("trtexec", Path("m.onnx"), "-a=on -b=2", Path("e.plan"), Path("r.json"), ["--noSpinWait"])
        assert argv == ["trtexec", "--onnx=m.onnx", "--noSpinWait", "--setBuildRoute=-a=on -b=2", "--saveEngine=e.plan", "--tuningResultFile=r.json"]

    def test_flags(self) -> None:
        profiles = {"x": Profile(min=(1, 3), opt=(8, 3), max=(32, 3)), "a:b": Profile(min=(1,), opt=(1,), max=(2,))}
        flags = proto.build_flags({"workspace_mb": 512, "opt_level": 5, "cuda_graph": False, "spin_wait": False}, profiles, Path("t.cache"))
        assert flags == [
            "--memPoolSize=workspace:512M",
            "--builderOptimizationLevel=5",
            "--timingCacheFile=t.cache",
            "--minShapes=x:1x3,'a:b':1",
            "--optShapes=x:8x3,'a:b':1",
            "--maxShapes=x:32x3,'a:b':2",
            "--noCudaGraph",
            "--noSpinWait",
        ]

    def test_shell_quoting_round_trips(self) -> None:
        """The printed command is shell-quoted and splits back into the same argv."""
        route = Route.parse("-conv_use_long_w=off -kgen:codegen:cuda_tile=2")
        opts = {"opt_level": 3, "extra_args": ["--useSpinWait"]}
        cmds = repro_commands(Path("my model.onnx"), route, opts)
        assert "'--setBuildRoute=-conv_use_long_w=off -kgen:codegen:cuda_tile=2'" in cmds["shell"]
        assert shlex.split(cmds["shell"]) == trtexec_argv(Path("my model.onnx"), route, opts)

    def test_repro_precision(self) -> None:
        """The precision knob never reaches trtexec; the converted model is used instead."""
        route = Route.parse("-kgen:tiling=2 -gptuner:precision=fp16")
        argv = trtexec_argv(Path("m.onnx"), route, {})
        assert "--onnx=model.fp16.onnx" in argv and "--setBuildRoute=-kgen:tiling=2" in argv
        snippet = python_snippet(Path("m.onnx"), route, {"workspace_mb": 64, "profiles": {"x": {"min": [1], "opt": [2], "max": [4]}}})
        compile(snippet, "<repro>", "exec")
        assert "config.build_route = '-kgen:tiling=2'" in snippet and "apply_precision" in snippet

    def test_extra_args(self) -> None:
        with pytest.raises(ConfigError, match="must be a list of strings"):
            proto.check_extra_args("--x")
        with pytest.raises(ConfigError, match="starting with '-'"):
            proto.check_extra_args(["x"])


# -- options, profiles, ONNX inspection -------------------------------------------------------
def _dynamic_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


class TestOptionsAndProfiles:
    def test_input_specs(self, tmp_path: Path) -> None:
        specs = onnx_input_specs(_dynamic_model(tmp_path / "m.onnx"))
        assert [(s.name, s.dtype, s.shape) for s in specs] == [("x", "float32", ("batch", 4))]

    def test_bad_model(self, tmp_path: Path) -> None:
        (tmp_path / "bad.onnx").write_bytes(b"not onnx")
        with pytest.raises(BackendError, match="not a readable ONNX model"):
            onnx_input_specs(tmp_path / "bad.onnx")
        with pytest.raises(BackendError, match="file not found"):
            onnx_input_specs(tmp_path / "missing.onnx")

    def test_resolve(self, tmp_path: Path) -> None:
        """Options first, else the dataset's shape, else a clear error."""
        specs = onnx_input_specs(_dynamic_model(tmp_path / "m.onnx"))
        opt = parse_profiles({"x": {"min": [1, 4], "opt": [8, 4], "max": [64, 4]}})
        assert resolve_profiles(specs, opt)["x"].opt == (8, 4)
        assert resolve_profiles(specs, {}, {"x": (16, 4)})["x"] == Profile(min=(16, 4), opt=(16, 4), max=(16, 4))
        with pytest.raises(BackendError, match=r"dynamic input\(s\) 'x' \[batch, 4\] need an optimization profile"):
            resolve_profiles(specs, {})
        with pytest.raises(BackendError, match="the model fixes it to 4"):
            resolve_profiles(specs, parse_profiles({"x": {"min": [1, 2], "opt": [1, 4], "max": [1, 4]}}))
        with pytest.raises(BackendError, match="unknown input"):
            resolve_profiles(specs, parse_profiles({"z": {"min": [1], "opt": [1], "max": [1]}}))

    @pytest.mark.parametrize(
        ("raw", "message"),
        [
            ({"x": {"min": [1], "opt": [2]}}, "must have exactly min, opt, max"),
            ({"x": {"min": [1], "opt": [2], "max": [1]}}, "need min <= opt <= max"),
            ({"x": {"min": [1], "opt": [1, 2], "max": [1, 2]}}, "ranks differ"),
            ({"x": {"min": [0], "opt": [1], "max": [1]}}, "list of positive integers"),
            ([1], "must map input names"),
        ],
    )
    def test_profile_errors(self, raw: object, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            parse_profiles(raw)

    @pytest.mark.parametrize(
        ("opts", "message"),
        [({"opt_level": 9}, "opt_level must be an integer 0-5"), ({"workspace_mb": -1}, "workspace_mb"), ({"timing_cache": "global"}, "timing_cache must be one of")],
    )
    def test_option_errors(self, opts: dict, message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            BuildOptions.from_options(opts)

    def test_unknown_option(self) -> None:
        with pytest.raises(ConfigError, match=r"unknown option\(s\) \['fp16'\] for backend 'tensorrt'"):
            TensorRTBackend.validate_options({"fp16": True})

    def test_shared_cache_location(self, tmp_path: Path) -> None:
        wd = tmp_path / "S" / "candidates" / "00001"
        assert shared_cache_path(wd, BuildOptions()) == tmp_path / "S" / "tensorrt_timing.cache"
        assert shared_cache_path(wd, BuildOptions(timing_cache_path="/x/t.cache")) == Path("/x/t.cache")


# -- precision transforms (real ONNX / ONNX Runtime tools on the CPU) -------------------------
class TestPrecision:
    def test_fp32_unchanged(self, tmp_path: Path) -> None:
        m = _dynamic_model(tmp_path / "m.onnx")
        assert apply_precision(m, "fp32", tmp_path) == m

    def test_fp16(self, tmp_path: Path) -> None:
        """fp16: float16 weights inside, float32 graph I/O (Cast at the boundary)."""
        out = apply_precision(_dynamic_model(tmp_path / "m.onnx"), "fp16", tmp_path)
        m = onnx.load(str(out))
        assert m.graph.initializer[0].data_type == TensorProto.FLOAT16
        assert m.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
        assert "Cast" in {n.op_type for n in m.graph.node}

    def test_int8_qdq_symmetric(self, tmp_path: Path) -> None:
        """int8_qdq: explicit Q/DQ with int8 zero points of 0 (what TensorRT needs)."""
        calib = {"x": np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)}
        out = apply_precision(_dynamic_model(tmp_path / "m.onnx"), "int8_qdq", tmp_path, calib)
        m = onnx.load(str(out))
        ops = [n.op_type for n in m.graph.node]
        assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
        zps = [numpy_helper.to_array(i) for i in m.graph.initializer if i.name.endswith("zero_point")]
        assert zps and all(z.dtype == np.int8 and not z.any() for z in zps)

    def test_int8_needs_calibration(self, tmp_path: Path) -> None:
        with pytest.raises(BackendError, match="needs calibration inputs"):
            apply_precision(_dynamic_model(tmp_path / "m.onnx"), "int8_qdq", tmp_path, None)


# -- timing-cache merge under a lock, CUDA error checking -------------------------------------
_MERGE_SCRIPT = """
import sys
from pathlib import Path
from gptuner_core.backends.tensorrt import timing_cache
path, tag, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    timing_cache.merge_into_file(path, lambda cur, i=i: cur + f"{tag}{i}\\n".encode())
"""


class TestTimingCacheAndCudaCall:
    def test_concurrent_merges_lose_nothing(self, tmp_path: Path) -> None:
        """Two processes merging into one file under the lock keep every entry."""
        path = tmp_path / "t.cache"
        procs = [
            subprocess.Popen([sys.executable, "-c", _MERGE_SCRIPT, str(path), tag, "25"], cwd=ROOT)
            for tag in ("a", "b")
        ]
        assert [p.wait(60) for p in procs] == [0, 0]
        lines = path.read_text().split()
        assert sorted(lines) == sorted([f"a{i}" for i in range(25)] + [f"b{i}" for i in range(25)])

    def test_empty_merge_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "t.cache"
        path.write_bytes(b"old")
        with pytest.raises(BackendError, match="0 bytes"):
            timing_cache.merge_into_file(path, lambda cur: b"")
        assert path.read_bytes() == b"old"

    def test_cuda_call(self) -> None:
        """(err, *values) tuples: values unpacked on success, BackendError naming the call on failure."""
        assert cuda_call((0, 1234)) == 1234
        assert cuda_call((0,)) is None
        assert cuda_call((0, 1, 2)) == (1, 2)
        with pytest.raises(BackendError, match=r"cudaMalloc\(x, 8 bytes\) failed"):
            cuda_call((2, 0), "cudaMalloc(x, 8 bytes)")
        with pytest.raises(BackendError, match="unexpected cuda-python return value"):
            cuda_call(None, "cudaFree")
