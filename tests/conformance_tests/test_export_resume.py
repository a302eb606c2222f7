"""``gptuner export --trtexec-cache`` writes a cache that ``trtexec --continue`` resumes (defect 14).

trtexec resumes by row count in its own expansion order and rebuilds its argv from the header; the
fake trtexec implements exactly that (``reconstructArgvForContinue``/``readTuningCacheHeader``,
checked in ``test_trtexec_facts.py``). A study that evaluated routes out of trtexec's order must
still end, after ``--continue``, with every route exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from gptuner_core.backends.tensorrt.backend import with_own_knobs
from gptuner_core.cli import main
from gptuner_core.expressions import Expression
from gptuner_core.knobs import KnobDatabase
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.storage import open_store


DATA = Path(__file__).resolve().parents[1] / "data"
EXPR = "-kgen:codegen:cuda_tile=[1|0] -reshape_ppg=[on|off] -conv_use_long_w=[on|off]"


def _lat(ms: float) -> LatencyStats:
    return LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms, cv=0.0,
                        ci_low_ms=ms, ci_high_ms=ms, n_samples=3, stop_reason="t")


def _study(tmp_path: Path, model: Path, *, search: str = "fast", order: tuple[int, ...] = (0, 3, 1), expr: str = EXPR,
           backend: str = "trtexec") -> Path:
    db = KnobDatabase.from_file(DATA / "trt_knobs_small.json")
    space = Expression.parse(" ".join(t for t in expr.split() if not t.startswith("-gptuner:")), db)
    routes = list(space.iter_routes("full" if search not in ("fast", "mixed") else "fast"))
    np.savez(tmp_path / "ds.npz", x=np.zeros((5, 4), np.float32))
    study = tmp_path / "study"
    with open_store(study) as store:
        store.init_study({"model": str(model), "backend": backend, "backend_options": {"timing_cache": "isolated", "opt_level": 4},
                          "expression": expr, "search": search, "metric": "l2", "epsilon": 1e-3,
                          "dataset": str(tmp_path / "ds.npz"), "batch_size": 2}, {"backend": backend})
        store.set_meta("knob_db", with_own_knobs(db).to_json())
        for n, i in enumerate(order):
            route = str(routes[i]) if n else ""  # gptuner's candidate 0 is the empty (default) route
            store.put_candidate(CandidateRecord(number=n, requested_route=route, state=CandidateState.COMPLETE,
                                                latency=_lat(0.4 + i / 100),
                                                accuracy=AccuracyResult(metric="l2", losses={"out": 0.0})))
    return study


def _continue(fake_bin: Path, cache: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FAKE_TRTEXEC_ROW_DELAY": "0"}
    return subprocess.run([str(fake_bin), "--continue", f"--tuningCacheFile={cache}"], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


class TestResumableExport:
    def test_continue_completes_each_route_once(self, fake_bin: Path, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Out-of-order candidates: the export keeps trtexec's prefix; --continue then runs the rest once."""
        study = _study(tmp_path, model)
        cache = tmp_path / "export.jsonl"
        assert main(["export", str(study), "--trtexec-cache", str(cache)]) == 0
        out = capsys.readouterr().out
        assert "resume with: trtexec --continue" in out and "1 evaluated candidate(s) are not in the prefix" in out
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        res = _continue(fake_bin, cache, elsewhere)
        assert res.returncode == 0, res.stdout
        rows = [json.loads(x) for x in cache.read_text().splitlines()[1:]]
        db = KnobDatabase.from_file(DATA / "trt_knobs_small.json")
        expected = [str(r) for r in Expression.parse(EXPR, db).iter_routes("fast")]
        assert [r["build_route"] for r in rows] == expected
        assert [r["iter"] for r in rows] == list(range(len(expected)))
        assert not any(r["crash"] for r in rows), rows

    def test_header_rebuilds_the_build(self, model: Path, tmp_path: Path) -> None:
        """The header argv carries the absolute model, the dataset's shapes and the builder options."""
        study = _study(tmp_path, model)
        cache = tmp_path / "export.jsonl"
        assert main(["export", str(study), "--trtexec-cache", str(cache)]) == 0
        header = json.loads(cache.read_text().splitlines()[0])
        argv = header["argv"]
        assert f"--onnx={model.resolve()}" in argv
        assert {"--minShapes=x:2x4", "--optShapes=x:2x4", "--maxShapes=x:2x4", "--builderOptimizationLevel=4"} <= set(argv)
        assert f"--tuneBuildRoutes={EXPR}" in argv and "--tuningSearch=fast" in argv
        assert any(a.startswith("--saveEngine=/") for a in argv)
        assert header["accuracy_parameter"]["epsilon"] == pytest.approx(1e-3) and header["accuracy_algorithm"] == "L2"

    def test_strategy_trtexec_lacks(self, fake_bin: Path, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A tpe study: the export says so and writes the prefix of trtexec's full order, resumable."""
        study = _study(tmp_path, model, search="tpe", order=(0, 1, 5))
        cache = tmp_path / "export.jsonl"
        assert main(["export", str(study), "--trtexec-cache", str(cache)]) == 0
        out = capsys.readouterr().out
        assert "trtexec has no search 'tpe'" in out
        header = json.loads(cache.read_text().splitlines()[0])
        assert "--tuningSearch=full" in header["argv"]
        # gptuner's candidate 0 is the default route = full index 0 of this expression
        res = _continue(fake_bin, cache, tmp_path)
        assert res.returncode == 0, res.stdout
        assert len(cache.read_text().splitlines()) == 1 + 8

    def test_varied_precision_is_not_resumable(self, model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """What trtexec cannot do is said, and every candidate is still written."""
        expr = EXPR + " -gptuner:precision=[fp32|fp16]"
        study = _study(tmp_path, model, expr=expr)
        cache = tmp_path / "export.jsonl"
        assert main(["export", str(study), "--trtexec-cache", str(cache)]) == 0
        out = capsys.readouterr().out
        assert "not resumable by trtexec --continue" in out and "-gptuner:precision" in out
        assert len(cache.read_text().splitlines()) == 1 + 3
