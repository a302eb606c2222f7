"""``$GPTUNER_STARTUP_TRACE``: where a study's first seconds go (``benchmarks/gpu_study.py``
reads it on the device: the first candidate started 3-4 s after the imports would allow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from gptuner_core.engine.process.startup_trace import ENV
from gptuner_core.engine.process.startup_trace import read
from gptuner_core.engine.process.startup_trace import step

from .conftest import QUICK
from .conftest import REPO


def test_a_study_traces_its_set_up_steps_and_its_fork_servers_imports(tmp_path):
    """A real study in a fresh process: the CLI's input shapes and its fork server's start, and
    each module the fork server imported before its first fork, timed in one file."""
    trace = tmp_path / "trace.jsonl"
    args = [sys.executable, "-m", "gptuner_core", "tune", str(REPO / "assets/cnn_digits.onnx"),
            "--backend", "onnxruntime", "--dataset", str(REPO / "assets/cnn_digits_eval.npz"),
            "--expr", "-ort:enable_mem_pattern=[on|off]", "--max-candidates", "1", "--metric", "cos",
            "--epsilon", "0.01", "--batch-size", "8", "--revalidate-top-k", "0",
            "--study", str(tmp_path / "study"), "--quiet",
            *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]
    env = {**os.environ, ENV: str(trace), "GPTUNER_START_METHOD": "auto",
           "GPTUNER_LOCK_DIR": str(tmp_path / "locks")}
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    steps = {(r["who"], r["step"]): r for r in read(trace)}
    assert ("cli", "input shapes") in steps
    assert ("cli", "cpu fork server started") in steps
    assert ("fork server", "numpy") in steps and ("fork server", "gptuner_core") in steps
    started = steps[("cli", "cpu fork server started")]
    for (who, _), row in steps.items():
        assert row["end"] >= row["start"]
        if who == "fork server":  # inside the CLI's wait for it
            assert started["start"] <= row["start"] <= row["end"] <= started["end"]


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with step("cli", "anything"):
        pass
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(ENV, str(tmp_path / "t.jsonl"))
    with step("cli", "anything"):
        pass
    assert [r["step"] for r in read(tmp_path / "t.jsonl")] == ["anything"]
