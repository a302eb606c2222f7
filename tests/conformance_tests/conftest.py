"""Fixtures of the conformance tests: the fake trtexec on PATH, the trtexec facts, a tiny model."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import onnx
import pytest
from onnx import TensorProto
from onnx import helper


sys.path.insert(0, str(Path(__file__).resolve().parent))  # api_usage, wheels (helpers, not tests)

DATA = Path(__file__).resolve().parents[1] / "data"
FAKE = DATA / "fake_trtexec.py"


@pytest.fixture(scope="session")
def facts() -> dict[str, Any]:
    """``tests/data/trt_trtexec_facts.json``: trtexec's facts, extracted from its sources."""
    return json.loads((DATA / "trt_trtexec_facts.json").read_text())


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
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["out"])], "g", [x], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path = tmp_path / "m.onnx"
    onnx.save(m, str(path))
    return path
