"""One test per behaviour defect found by checking gptuner against the real TensorRT 11.1-11.4 artifacts.

The defect numbers are those of ``shared/reference/tensorrt-conformance.md``. Each test was
written before its fix and failed on the code of commit 85cf69a. Where a TensorRT object is
needed, the test uses a small stand-in whose methods have the *real* pybind11 signatures (checked
against the real wheels by ``test_api_conformance.py``); nothing here builds an engine.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper
from onnx import numpy_helper

from gptuner_core.backends.tensorrt import build
from gptuner_core.backends.tensorrt import knob_cache
from gptuner_core.backends.tensorrt import timing_cache
from gptuner_core.backends.tensorrt import trtexec_protocol as proto
from gptuner_core.backends.tensorrt.probe import probe_cuda_python
from gptuner_core.backends.tensorrt.repro import python_snippet
from gptuner_core.backends.tensorrt.repro import repro_commands
from gptuner_core.backends.tensorrt.route_check import check_readback
from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError
from gptuner_core.expressions import Expression
from gptuner_core.interop.trtexec_cache import ACCURACY_ALGORITHMS
from gptuner_core.knobs import KnobDatabase
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.routes import Route
from gptuner_core.strategies.mixed import MixedStrategy


DATA = Path(__file__).resolve().parents[1] / "data"


def _model(path: Path, *, inputs: tuple[str, ...] = ("x",), dynamic: bool = True, external: bool = False) -> Path:
    """``y = sum_i(x_i @ w)`` with one (optionally dynamic) ``[batch, 4]`` input per name."""
    batch: str | int = "batch" if dynamic else 1
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [batch, 4]) for n in inputs]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
    nodes = [helper.make_node("MatMul", [n, "w"], [f"m{i}"]) for i, n in enumerate(inputs)]
    acc = "m0"
    for i in range(1, len(inputs)):
        nodes.append(helper.make_node("Add", [acc, f"m{i}"], [f"s{i}"]))
        acc = f"s{i}"
    nodes.append(helper.make_node("Identity", [acc], ["y"]))
    model = helper.make_model(helper.make_graph(nodes, "g", ins, [out], [w]), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if external:
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=path.name + ".data", size_threshold=0)
    else:
        onnx.save(model, str(path))
    return path


# -- stand-ins with the real signatures ----------------------------------------------------------
class _Parser:
    """``OnnxParser`` stand-in: ``parse(model: Buffer, path: str = None) -> bool`` (11.1-11.4).

    Like the real parser it can only resolve external weights when told where the model lives.
    """

    def __init__(self) -> None:
        self.errors: list[str] = []

    def parse(self, model: bytes, path: str | None = None) -> bool:
        proto_ = onnx.load_model_from_string(bytes(model))
        if any(t.data_location == TensorProto.EXTERNAL for t in proto_.graph.initializer):
            if path is None:
                self.errors.append("Failed to open external data file (no model path given)")
                return False
            onnx.external_data_helper.load_external_data_for_model(proto_, str(Path(path).parent))
        return True

    def parse_from_file(self, model: str) -> bool:
        return self.parse(Path(model).read_bytes(), model)

    @property
    def num_errors(self) -> int:
        return len(self.errors)

    def get_error(self, index: int) -> str:
        return self.errors[index]


class _Profile:
    def __init__(self) -> None:
        self.shapes: dict[str, tuple[tuple[int, ...], ...]] = {}

    def set_shape(self, input: str, min: tuple[int, ...], opt: tuple[int, ...], max: tuple[int, ...]) -> None:  # noqa: A002
        self.shapes[input] = (tuple(min), tuple(opt), tuple(max))


class _Config:
    """``add_optimization_profile(profile) -> int``: the index, or -1 when the profile is invalid."""

    def __init__(self, valid: bool = True) -> None:
        self.valid = valid
        self.profiles: list[_Profile] = []

    def add_optimization_profile(self, profile: _Profile) -> int:
        if not self.valid:
            return -1
        self.profiles.append(profile)
        return len(self.profiles) - 1


class _Builder:
    def create_optimization_profile(self) -> _Profile:
        return _Profile()


# -- 1: external data ----------------------------------------------------------------------------
class TestExternalData:
    def test_build_parses_with_the_model_path(self, tmp_path: Path) -> None:
        """A model with external weights parses: the parser is given the model's path (defect 1)."""
        model = _model(tmp_path / "big.onnx", external=True)
        build._parse_onnx(types.SimpleNamespace(OnnxParser=lambda network, logger: _Parser()), None, None, model)

    def test_repro_snippet_passes_the_path(self, tmp_path: Path) -> None:
        """The Python snippet hands the path to the parser too (defect 1)."""
        snippet = python_snippet(tmp_path / "big.onnx", Route(), {})
        assert "parser.parse_from_file(" in snippet or "parser.parse(f.read(), onnx_path)" in snippet


# -- 2: repro reproduces the build ---------------------------------------------------------------
class TestRepro:
    def test_one_profile_for_all_dynamic_inputs(self, tmp_path: Path) -> None:
        """Two dynamic inputs share ONE optimization profile in the snippet, as in the build (defect 2)."""
        model = _model(tmp_path / "m.onnx", inputs=("a", "b"))
        opts = {"profiles": {"a": {"min": [1, 4], "opt": [2, 4], "max": [4, 4]},
                             "b": {"min": [1, 4], "opt": [2, 4], "max": [4, 4]}}}
        snippet = python_snippet(model, Route(), opts)
        assert snippet.count("create_optimization_profile()") == 1
        assert snippet.count("add_optimization_profile(") == 1
        assert snippet.count("profile.set_shape(") == 2

    def test_shell_line_has_the_dataset_shapes(self, tmp_path: Path) -> None:
        """Dynamic inputs without a profile option get the dataset's shape, as the build does (defect 2)."""
        model = _model(tmp_path / "m.onnx")
        cmds = repro_commands(model, Route(), {}, feed_shapes={"x": (8, 4)})
        argv = shlex.split(cmds["shell"].split(" && ")[-1])
        assert "--optShapes=x:8x4" in argv and "--minShapes=x:8x4" in argv and "--maxShapes=x:8x4" in argv
        assert "profile.set_shape('x', (8, 4), (8, 4), (8, 4))" in cmds["python"]

    def test_converted_model_name_matches_the_build(self, tmp_path: Path) -> None:
        """Both outputs name the file the precision transform writes: ``<dir>/model.<precision>.onnx``."""
        model = _model(tmp_path / "net.onnx", dynamic=False)
        cmds = repro_commands(model, Route.parse("-gptuner:precision=fp16"), {})
        trt_argv = shlex.split(cmds["shell"].split(" && ")[-1])
        assert "--onnx=model.fp16.onnx" in trt_argv
        assert "apply_precision" in cmds["shell"]  # the shell line converts first
        written = build.converted_model_path(Path("."), "fp16")
        assert str(written) == "model.fp16.onnx"


# -- 3: lossless outputs from the trtexec runner -------------------------------------------------
class TestLosslessOutputs:
    def test_raw_dump_is_read_bit_exact(self, tmp_path: Path) -> None:
        """Outputs come from --dumpRawBindingsToFile's raw files: exact values, nan/inf, integer dtypes (defect 3)."""
        from gptuner_core.backends.tensorrt.trtexec_outputs import read_raw_outputs

        f = np.array([[1.0000001, np.nan, np.inf, -0.0]], dtype=np.float32)
        i = np.array([[2**31 - 1, -7]], dtype=np.int32)
        (tmp_path / "y.output.1.4.fp32.raw").write_bytes(f.tobytes())
        (tmp_path / "idx_0.output.1.2.int32.raw").write_bytes(i.tobytes())
        (tmp_path / "x.input.1.4.fp32.raw").write_bytes(f.tobytes())
        out = read_raw_outputs(tmp_path, ["y", "idx:0"])
        assert out["y"].dtype == np.float32 and out["y"].tobytes() == f.tobytes()
        assert out["idx:0"].dtype == np.int32 and (out["idx:0"] == i).all()

    def test_runner_argv_asks_for_raw_files(self) -> None:
        """The run that fetches outputs dumps raw bindings (and keeps --exportOutput for the D2H fetch)."""
        from gptuner_core.backends.tensorrt.trtexec_outputs import OUTPUT_FLAGS

        assert "--dumpRawBindingsToFile" in OUTPUT_FLAGS


# -- 4: trtexec's own messages -------------------------------------------------------------------
class TestTrtexecMessages:
    def test_signal_named_with_strsignal(self, tmp_path: Path) -> None:
        """trtexec names signals with strsignal(): 'child killed by signal 11 (Segmentation fault)' (defect 4)."""
        out = proto.classify(-11, tmp_path / "r.json")
        assert out.message == "child killed by signal 11 (Segmentation fault)"

    def test_parse_error_text(self, tmp_path: Path) -> None:
        """An unparsable result reads 'failed to parse tuning result JSON: ...' (defect 4)."""
        res = tmp_path / "r.json"
        res.write_text('{"gpu_time_ms": 0.4, "accuracy_fa')
        assert proto.classify(0, res).message.startswith("failed to parse tuning result JSON: ")


# -- 5: mixed phase 2 is triggered by positive variants ------------------------------------------
def _rec(n: int, route: Route, ms: float) -> CandidateRecord:
    lat = LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms, cv=0.0,
                       ci_low_ms=ms, ci_high_ms=ms, n_samples=1, stop_reason="t")
    return CandidateRecord(number=n, requested_route=str(route), state=CandidateState.COMPLETE, latency=lat)


class TestMixedTrigger:
    def test_one_knob_with_two_faster_values_enters_phase_two(self) -> None:
        """Two positive variants of ONE knob are enough, as trtexec counts variants (defect 5)."""
        db = KnobDatabase.from_file(DATA / "trt_knobs_small.json")
        space = Expression.parse("-kgen:codegen:cuda_tile=[0|1|2|3] -conv_use_long_w=[on|off]", db)
        strat = MixedStrategy(space)
        history: list[CandidateRecord] = []
        times = {0: 1.0}
        for i, route in enumerate(space.iter_routes("fast")):
            varied = space.varied_at(i)
            ms = times.get(i, 2.0)
            if varied is not None and varied[0] == "-kgen:codegen:cuda_tile" and varied[1] in ("2", "3"):
                ms = 0.5
            history.append(_rec(i, route, ms))
        while strat.ask(history) is not None:
            pass
        # phase 2 = full over the one positive knob (4 routes, all already built in phase 1, so
        # gptuner skips them); trtexec would enter it, and so must the plan
        assert strat.planned() == space.count("fast") + 4


# -- 6: the trtexec backend's effective route ----------------------------------------------------
class TestTrtexecEffectiveRoute:
    def test_log_echo_is_not_the_effective_route(self) -> None:
        """'Using tuning build route:' is logged before setBuildRoute: it is an echo, not a read-back (defect 6)."""
        summary = proto.parse_log("[I] Using tuning build route: -a=on  -b=1\n")
        assert summary.requested_route_echo == "-a=on  -b=1"
        assert not hasattr(summary, "applied_route")


# -- 7: one lock protocol with trtexec -----------------------------------------------------------
LOCKF_HOLDER = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char** argv) {
    FILE* f = fopen(argv[1], "wb+");            /* exactly trtexec's shared/utils/fileLock.cpp */
    if (!f || lockf(fileno(f), F_LOCK, 0) != 0) return 1;
    puts("locked"); fflush(stdout);
    getchar();                                  /* hold until stdin closes */
    return 0;
}
"""


@pytest.fixture(scope="module")
def lockf_holder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil

    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        pytest.skip("no C compiler to build trtexec's lockf() holder")
    d = tmp_path_factory.mktemp("lockf")
    (d / "hold.c").write_text(LOCKF_HOLDER)
    subprocess.run([gcc, "-o", str(d / "hold"), str(d / "hold.c")], check=True)
    return d / "hold"


class TestTimingCacheLock:
    def test_trtexecs_lockf_blocks_our_lock(self, tmp_path: Path, lockf_holder: Path) -> None:
        """While trtexec (lockf on '<cache>.lock') holds the lock, gptuner's lock waits (defect 7)."""
        cache = tmp_path / "t.cache"
        holder = subprocess.Popen([str(lockf_holder), str(cache) + ".lock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
            got = threading.Event()

            def take() -> None:
                with timing_cache.locked(cache):
                    got.set()

            t = threading.Thread(target=take, daemon=True)
            t.start()
            assert not got.wait(0.5), "gptuner took the lock while trtexec held it"
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(10)
        assert got.wait(5)

    def test_read_is_locked(self, tmp_path: Path, lockf_holder: Path) -> None:
        """The shared cache is read under the same lock, never while a writer holds it (defect 7)."""
        cache = tmp_path / "t.cache"
        cache.write_bytes(b"abc")
        holder = subprocess.Popen([str(lockf_holder), str(cache) + ".lock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        result: list[bytes] = []
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
            t = threading.Thread(target=lambda: result.append(timing_cache.read_locked(cache)), daemon=True)
            t.start()
            time.sleep(0.5)
            assert not result, "read the cache while trtexec held its lock"
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(10)
        t.join(5)
        assert result == [b"abc"]


# -- 8: a loader as lenient as trtexec's ---------------------------------------------------------
class TestLenientKnobLoader:
    def test_odd_entries_are_skipped_and_reported(self, tmp_path: Path) -> None:
        """Entries trtexec skips or defaults never disable the backend; each is reported (defect 8)."""
        raw = json.dumps({
            "tuner_version": "2.19.45",
            "tuner_options": [
                {"option": "-a", "allowed_values": "-a=[on|off]", "default_value": "on", "help": "A"},
                "not an object",
                {"allowed_values": "-x=[1|2]", "default_value": "1"},
                {"option": 7, "default_value": "1"},
                {"option": "-b", "allowed_values": "-b=[0|1]", "default_value": 1},
                {"option": "-c"},
                {"option": "-a", "allowed_values": "-a=[on|off|auto]", "default_value": "auto", "help": "A2"},
            ],
        })
        path = knob_cache.store("11.1.0.106", raw, tmp_path)
        db = knob_cache.load_cached("11.1.0.106", tmp_path)
        assert path.read_text() == raw  # the raw string is kept as TensorRT returned it
        assert db is not None and [k.name for k in db] == ["-a", "-b", "-c"]
        assert db["-a"].values == ("on", "off", "auto") and db["-a"].default == "auto"  # last one wins
        assert db["-b"].default == "" and db["-c"].values is None
        report = knob_cache.load_report(raw)
        assert len(report) == 5
        assert any("tuner_options[1]" in r and "not an object" in r for r in report)
        assert any("duplicate" in r and "-a" in r for r in report)

    def test_no_array_is_still_an_error(self) -> None:
        """What trtexec itself rejects (no tuner_options array) is still refused."""
        from gptuner_core.errors import KnobDatabaseError

        with pytest.raises(KnobDatabaseError, match="tuner_options"):
            knob_cache.parse_lenient('{"tuner_version": "1"}', source="x")


# -- 9: lInf only ---------------------------------------------------------------------------------
class TestAccuracyAlgorithmSpelling:
    def test_lInf_is_the_only_spelling(self) -> None:
        """trtexec's --accuracyAlgorithm map is case-sensitive: l0 l1 l2 lInf cos (defect 9)."""
        assert set(ACCURACY_ALGORITHMS) == {"l0", "l1", "l2", "lInf", "cos"}
        assert ACCURACY_ALGORITHMS["lInf"] == "LInf"


# -- 10: tensor names with ',' -------------------------------------------------------------------
class TestCommaInNames:
    def test_shapes_refuse_a_comma(self) -> None:
        """trtexec splits shape lists on ',' before reading quotes: such a name cannot be passed (defect 10)."""
        with pytest.raises(ConfigError, match=r"'a,b'.*','"):
            proto.shapes_arg("--optShapes", {"a,b": (1, 4)})

    def test_load_inputs_refuse_a_comma(self, tmp_path: Path) -> None:
        """--loadInputs is split the same way (defect 10)."""
        from gptuner_core.backends.tensorrt.trtexec import TrtexecRunner

        runner = TrtexecRunner("trtexec", tmp_path / "e.plan", {}, [])
        with pytest.raises(ConfigError, match=r"'a,b'"):
            runner.prepare({"a,b": np.zeros((1, 4), np.float32)})

    def test_colon_still_quoted(self) -> None:
        assert proto.shapes_arg("--optShapes", {"a:b": (1, 4)}) == "--optShapes='a:b':1x4"


# -- 11: add_optimization_profile's return value --------------------------------------------------
class TestProfileIndex:
    def test_invalid_profile_is_an_error(self) -> None:
        """add_optimization_profile returns -1 for an invalid profile; the build stops with the shapes (defect 11)."""
        prof = {"x": build.Profile(min=(1, 4), opt=(2, 4), max=(4, 4))}
        with pytest.raises(BackendError, match=r"add_optimization_profile returned -1.*'x'.*\[1, 4\]"):
            build.add_profile(_Builder(), _Config(valid=False), prof)
        config = _Config()
        build.add_profile(_Builder(), config, prof)
        assert config.profiles[0].shapes == {"x": ((1, 4), (2, 4), (4, 4))}


# -- 12: cuda-python vs driver -------------------------------------------------------------------
def _cudart(driver: int, runtime: int) -> types.SimpleNamespace:
    ok = types.SimpleNamespace(value=0, name="cudaSuccess")
    return types.SimpleNamespace(
        cudaDriverGetVersion=lambda: (ok, driver),
        cudaRuntimeGetVersion=lambda: (ok, runtime),
    )


class TestCudaDriverMismatch:
    @pytest.mark.parametrize(
        ("driver", "runtime", "reason"),
        [
            (0, 12090, "no NVIDIA driver"),
            (12040, 13000, "cuda-python is built for CUDA 13.0, but the NVIDIA driver supports CUDA 12.4"),
        ],
        ids=["no-driver", "old-driver"],
    )
    def test_mismatch_is_unavailable(self, driver: int, runtime: int, reason: str) -> None:
        """A driver older than cuda-python's runtime is caught by the probe, not by every run (defect 12)."""
        got = probe_cuda_python(lambda name: _cudart(driver, runtime))
        assert reason in got

    def test_match_is_available(self) -> None:
        assert probe_cuda_python(lambda name: _cudart(13020, 13000)) == ""


# -- U1: route read-back compared canonically -----------------------------------------------------
class TestRouteReadback:
    DB = KnobDatabase.from_json({"tuner_version": "t", "tuner_options": [
        {"option": "-a", "allowed_values": "-a=[on|off]", "default_value": "on", "help": ""},
        {"option": "-b", "allowed_values": "-b=[0|1|2]", "default_value": "1", "help": ""},
        {"option": "-n", "allowed_values": "-n=int32_t", "default_value": "4", "help": ""},
    ]})

    def test_normalized_readback_is_accepted(self) -> None:
        """Re-ordered, re-spaced, defaults added, numbers re-spelled: not a failure; recorded as effective (U1)."""
        got = check_readback(Route.parse("-b=2 -n=8"), "  -a=on   -n=08 -b=2 ", self.DB)
        assert got.effective == "-a=on -n=08 -b=2"
        assert got.differs

    def test_identical_readback(self) -> None:
        got = check_readback(Route.parse("-a=off"), "-a=off", self.DB)
        assert got.effective == "-a=off" and not got.differs

    @pytest.mark.parametrize(
        ("requested", "readback", "what"),
        [("-a=off -b=2", "-b=2", "dropped -a=off"), ("-b=2", "-b=0", "changed -b=2 to -b=0")],
        ids=["dropped", "changed"],
    )
    def test_dropped_or_changed_knob_fails(self, requested: str, readback: str, what: str) -> None:
        """Only a dropped or changed requested knob fails, and the message has both strings (U1)."""
        with pytest.raises(BackendError) as info:
            check_readback(Route.parse(requested), readback, self.DB)
        msg = str(info.value)
        assert what in msg and repr(requested) in msg and repr(readback) in msg

    def test_default_dropped_from_readback_is_fine(self) -> None:
        """A requested default that TensorRT omits on read-back is the same build (U1)."""
        got = check_readback(Route.parse("-a=on -b=2"), "-b=2", self.DB)
        assert got.effective == "-b=2"


def test_module_sizes() -> None:
    """Every module of the TensorRT backend and the interop package stays under 400 lines."""
    root = Path(__file__).resolve().parents[2] / "gptuner_core"
    files = [*(root / "backends" / "tensorrt").glob("*.py"), *(root / "interop").glob("*.py"),
             root / "cli" / "doctor.py"]
    too_long = {str(f.relative_to(root)): n for f in files if f.exists() and (n := len(f.read_text().splitlines())) > 400}
    assert not too_long


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
