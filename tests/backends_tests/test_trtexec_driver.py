"""Contract test of the trtexec driver against tests/data/fake_trtexec.py, through real processes.

The fake follows trtexec 11.1's documented child protocol (result file, exit codes, a real SIGSEGV,
a missing result file, an accuracy failure with a non-zero exit); the route values select each
case, so every branch of the driver's classification runs against a real subprocess.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper

from gptuner_core.backends.tensorrt import TrtexecBackend
from gptuner_core.backends.tensorrt import follow_tune_run
from gptuner_core.backends.tensorrt import probe_trtexec
from gptuner_core.backends.tensorrt.trtexec import TrtexecChildError
from gptuner_core.backends.tensorrt.trtexec import tune_run_argv
from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError
from gptuner_core.errors import InvalidRouteError
from gptuner_core.records import CandidateState
from gptuner_core.routes import Route


FAKE = Path(__file__).resolve().parents[1] / "data" / "fake_trtexec.py"


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``trtexec`` on PATH that runs the fake with this interpreter; caches in tmp."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "trtexec"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("GPTUNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPTUNER_TRTEXEC", raising=False)
    return exe


@pytest.fixture
def model(tmp_path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["out"])], "g", [x], [y])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph), str(path))
    return path


def workdir(tmp_path: Path, n: int = 0) -> Path:
    return tmp_path / "study" / "candidates" / f"{n:05d}"


class TestProbe:
    def test_found_on_path(self, fake_bin: Path) -> None:
        """The fake on PATH is found and its --help mentions --tuneBuildRoutes."""
        ok, reason, text = probe_trtexec()
        assert ok and reason == "" and "--tuneBuildRoutes" in text
        avail = TrtexecBackend.availability()
        assert avail.available and avail.version == "11.1.0"

    def test_no_tuning_support(self, fake_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """A trtexec without --tuneBuildRoutes is refused with a reason naming the flag."""
        monkeypatch.setenv("FAKE_TRTEXEC_NO_TUNE", "1")
        ok, reason, _ = probe_trtexec()
        assert not ok and "has no --tuneBuildRoutes" in reason

    def test_missing(self, tmp_path: Path) -> None:
        """A missing binary gives a reason naming what was looked for."""
        ok, reason, _ = probe_trtexec(str(tmp_path / "nope" / "trtexec"))
        assert not ok and "no executable trtexec found" in reason


class TestBuildClassification:
    def test_success(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """A good route gives an engine, trtexec's gpu_time_ms and the applied route."""
        be = TrtexecBackend({"timing_cache": "isolated", "cuda_graph": False})
        res = be.build(model, Route.parse("-kgen:codegen:cuda_tile=1"), workdir(tmp_path))
        assert res.artifact.is_file()
        assert res.effective_route == "-kgen:codegen:cuda_tile=1"
        assert res.info["trtexec_gpu_time_ms"] == 0.4
        argv = res.info["command"]
        assert argv[0] == str(fake_bin)
        assert "--setBuildRoute=-kgen:codegen:cuda_tile=1" in argv
        assert f"--tuningResultFile={workdir(tmp_path) / 'trtexec_result.json'}" in argv
        assert "--noCudaGraph" in argv
        assert f"--timingCacheFile={workdir(tmp_path) / 'tensorrt_timing.cache'}" in argv

    def test_shared_timing_cache_path(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """Shared mode points every child at STUDY/tensorrt_timing.cache."""
        res = TrtexecBackend().build(model, Route.parse("-kgen:codegen:cuda_tile=0"), workdir(tmp_path, 3))
        assert f"--timingCacheFile={tmp_path / 'study' / 'tensorrt_timing.cache'}" in res.info["command"]
        assert res.info["trtexec_gpu_time_ms"] == 0.5

    @pytest.mark.parametrize(
        ("route", "state", "crashed", "message"),
        [
            ("-kgen:codegen:cuda_tile=2", CandidateState.CRASHED, True, "child killed by signal 11 (Segmentation fault)"),
            ("-kgen:codegen:cuda_tile=3", CandidateState.CRASHED, True, "missing tuning result file"),
            ("-kgen:tiling=2", CandidateState.CRASHED, True, "failed to parse tuning result JSON"),
            ("-copy_ppg=off", CandidateState.CRASHED, False, "reported no GPU time"),
        ],
        ids=["sigsegv", "build-failure", "garbage-result", "zero-time"],
    )
    def test_failures(
        self, fake_bin: Path, model: Path, tmp_path: Path, route: str, state: CandidateState, crashed: bool, message: str
    ) -> None:
        """Each failing child is classified as trtexec's parent does."""
        be = TrtexecBackend({"timing_cache": "isolated"})
        with pytest.raises(TrtexecChildError) as info:
            be.build(model, Route.parse(route), workdir(tmp_path))
        outcome = info.value.outcome
        assert outcome.state is state
        assert outcome.crashed is crashed
        assert message in outcome.message
        assert message in str(info.value)

    def test_accuracy_failure_with_references(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """trtexec checks accuracy only against --loadRefOutputs; a failure exits 1 with a valid result.

        The classification is trtexec's parent's: not a crash, 'child exited with status 1', and
        the per-tensor losses are kept.
        """
        from gptuner_core.backends.tensorrt import trtexec_protocol as proto
        from gptuner_core.backends.tensorrt.trtexec_child import run_child

        (tmp_path / "x.bin").write_bytes(bytes(16))
        (tmp_path / "out.bin").write_bytes(bytes(16))
        refs = [f"--loadInputs=x:{tmp_path / 'x.bin'}", f"--loadRefOutputs=out:{tmp_path / 'out.bin'}", "--accuracyThreshold=0.001"]
        res = tmp_path / "r.json"
        argv = proto.child_argv(str(fake_bin), model, "-match_ragged_mha=on", tmp_path / "e.plan", res, refs)
        rc, timed_out = run_child(argv, tmp_path / "log.txt")
        out = proto.classify(rc, res, timed_out_s=timed_out)
        assert (out.state, out.crashed, out.message) == (CandidateState.ACCURACY_FAILED, False, "child exited with status 1")
        assert out.result is not None and out.result.accuracy_loss == {"out": 0.5}
        assert "[FAIL: >= threshold 0.001000]" in (tmp_path / "log.txt").read_text()

    def test_stale_result_removed(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """A result left by an earlier run is deleted first, so a crash is never read as success."""
        wd = workdir(tmp_path)
        wd.mkdir(parents=True)
        (wd / "trtexec_result.json").write_text('{"gpu_time_ms": 0.1, "accuracy_failed": false, "accuracy_loss": {}}')
        with pytest.raises(TrtexecChildError, match="missing tuning result file"):
            TrtexecBackend().build(model, Route.parse("-kgen:codegen:cuda_tile=3"), wd)

    def test_timeout(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """gptuner's OWN timeout: a hung child is killed after timeout_s and classified TIMED_OUT.

        This tests gptuner, not trtexec: trtexec has no per-iteration timeout (its parent would
        wait for a hung child forever; --tuningTimeOut is only checked between iterations).
        """
        with pytest.raises(TrtexecChildError) as info:  # a hang would outlast the suite's timeout
            TrtexecBackend({"timeout_s": 1}).build(model, Route.parse("-kgen:tiling=0"), workdir(tmp_path))
        assert info.value.outcome.state is CandidateState.TIMED_OUT

    def test_invalid_route_never_starts_a_child(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """Unknown knobs are rejected against --helpBuildRoute's database before any child runs."""
        with pytest.raises(InvalidRouteError, match="Unknown knob: -nope"):
            TrtexecBackend().build(model, Route.parse("-nope=1"), workdir(tmp_path))
        assert not (workdir(tmp_path) / "trtexec_build.log").exists()

    def test_extra_args_cannot_override_protocol(self) -> None:
        """extra_args may not set flags the driver owns."""
        with pytest.raises(ConfigError, match="--saveEngine"):
            TrtexecBackend({"extra_args": ["--saveEngine=x.plan"]})


class TestDescribeAndRun:
    def test_describe(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """--helpBuildRoute's JSON becomes the knob database (cached), plus gptuner's precision knob."""
        db = TrtexecBackend().describe(model)
        assert db.tuner_version == "2.19.45"
        assert "-kgen:codegen:cuda_tile" in db and "-gptuner:precision" in db
        assert list((tmp_path / "cache" / "tensorrt" / "trtexec-11.1.0").glob("*.json"))

    def test_runner(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """time_calls(n) = n x trtexec's mean GPU time; infer() reads the raw dumps bit-exactly."""
        be = TrtexecBackend()
        res = be.build(model, Route.parse("-kgen:codegen:cuda_tile=1"), workdir(tmp_path))
        with be.load(res) as runner:
            feeds = {"x": np.array([[1, 2, 3, 4]], dtype=np.uint8)}
            runner.prepare(feeds)
            assert runner.time_calls(10) == 4_000_000
            out = runner.infer(feeds)
        assert out["out"].shape == (1, 2) and out["out"].dtype == np.float32
        assert out["out"][0, 0] == np.float32(10) / np.float32(3)  # exact, not --exportOutput's 6 digits
        assert np.isnan(out["out"][0, 1])


class TestFollowTuneRun:
    def test_rows_as_they_appear(self, fake_bin: Path, model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Rows are yielded one by one while trtexec runs, crashes included."""
        monkeypatch.setenv("FAKE_TRTEXEC_ROW_DELAY", "0.2")
        cache = tmp_path / "run.jsonl"
        cache.write_text("stale\n")
        headers = []
        argv = [str(fake_bin), f"--onnx={model}", "--tuneBuildRoutes=-kgen:codegen:cuda_tile=[1|0|2] -match_ragged_mha=[off|on]"]
        times, rows = [], []
        t0 = time.monotonic()
        for row in follow_tune_run(argv, cache, poll_s=0.05, on_header=headers.append):
            rows.append(row)
            times.append(time.monotonic() - t0)
        assert [r.iter for r in rows] == [0, 1, 2, 3]
        assert rows[0].build_route == "-kgen:codegen:cuda_tile=1 -match_ragged_mha=off"
        assert [r.crash for r in rows] == [False, False, False, True]
        assert headers and headers[0].tuning_expr.startswith("-kgen:codegen:cuda_tile")
        assert times[0] < times[-1] - 0.3  # the first row came long before the last

    def test_failed_run_raises_after_rows(self, fake_bin: Path, model: Path, tmp_path: Path) -> None:
        """A run where nothing succeeds still yields its rows, then raises with the exit status."""
        argv = [str(fake_bin), f"--onnx={model}", "--tuneBuildRoutes=-kgen:codegen:cuda_tile=2"]
        rows = []
        with pytest.raises(BackendError, match="exited with status 1"):
            for row in follow_tune_run(argv, tmp_path / "c.jsonl", poll_s=0.05):
                rows.append(row)
        assert len(rows) == 1 and rows[0].crash

    def test_argv_checks(self, tmp_path: Path) -> None:
        """Shell strings, non-tuning argv and a conflicting cache path are refused."""
        with pytest.raises(ConfigError, match="argv list"):
            tune_run_argv("trtexec --tuneBuildRoutes=x", tmp_path / "c")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="no --tuneBuildRoutes"):
            tune_run_argv(["trtexec", "--onnx=m"], tmp_path / "c")
        with pytest.raises(ConfigError, match="writes the cache to"):
            tune_run_argv(["trtexec", "--tuneBuildRoutes=x", "--tuningCacheFile=other"], tmp_path / "c")
        assert tune_run_argv(["t", "--tuneBuildRoutes=x"], tmp_path / "c")[-1] == f"--tuningCacheFile={tmp_path / 'c'}"
