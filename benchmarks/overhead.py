"""The tuner's own time per candidate: everything except build and measurement.

Runs a real study (ONNX Runtime, real spawn processes, real SQLite) over a tiny model with a
cheap measurement budget, wrapping the real ``run_isolated`` with a timer, and reports per
candidate:

* bookkeeping: parent time outside the candidate's process (strategy ask/tell, store commits,
  accuracy gate, speed-up CI, progress) — the engine's own overhead (target <= 50 ms);
* process start-up: spawn of a fresh interpreter + imports until the child reports its first
  phase (the price of isolation, paid once per candidate);
* child extra: child time that is neither build nor measurement (loading inputs, outputs for
  the accuracy gate, result file).

Usage: .venv/bin/python benchmarks/overhead.py [--routes 16]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from engine_tests.conftest import make_tiny_model  # noqa: E402

import gptuner_core.engine.tuner as tuner_mod  # noqa: E402
from gptuner_core.config import StudyConfig  # noqa: E402
from gptuner_core.storage import open_store  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", type=int, default=16, help="candidates to run (<= 16)")
    args = ap.parse_args()
    import numpy as np

    tmp = Path(tempfile.mkdtemp(prefix="gptuner-overhead-"))
    model = make_tiny_model(tmp / "tiny.onnx")
    np.savez(tmp / "ds.npz", x=np.random.default_rng(0).normal(size=(32, 16)).astype(np.float32))
    isolated = {"s": 0.0}
    real = tuner_mod.run_isolated

    def timed(*a, **kw):
        t0 = time.perf_counter()
        try:
            return real(*a, **kw)
        finally:
            isolated["s"] += time.perf_counter() - t0

    tuner_mod.run_isolated = timed
    per_candidate: list[float] = []
    real_eval = tuner_mod.Tuner._evaluate

    def timed_eval(self, *a, **kw):
        before = isolated["s"]
        t0 = time.perf_counter()
        try:
            return real_eval(self, *a, **kw)
        finally:
            per_candidate.append(time.perf_counter() - t0 - (isolated["s"] - before))

    tuner_mod.Tuner._evaluate = timed_eval
    cfg = StudyConfig(
        model=str(model), backend="gptuner_core.testing.faulty_backend:FaultyBackend",
        expression="-fault:sleep_ms=[0|100|200|300] -fault:label=[a|b] -ort:threads=[0|1]",
        search="full", dataset=str(tmp / "ds.npz"), batch_size=4,
        measurement={"warmup_s": 0.0, "warmup_calls": 1, "min_samples": 5, "max_samples": 5,
                     "max_time_s": 0.2},
        revalidate_top_k=0, drift_every=0, max_candidates=args.routes,
    )
    t0 = time.perf_counter()
    tuner_mod.Tuner(cfg, tmp / "study").run()
    total = time.perf_counter() - t0
    with open_store(tmp / "study", readonly=True) as store:
        recs = store.candidates()
    n = len(recs)
    startup = [r.extra.get("phase_times", {}).get("start", 0.0) for r in recs]
    child_extra = []
    for r in recs:
        pt = r.extra.get("phase_times", {})
        child = sum(pt.values())
        child_extra.append(child - pt.get("start", 0.0) - (r.build_time_s or 0) - (r.measure_time_s or 0))
    book = (total - isolated["s"]) / n
    steady = per_candidate[2:] or per_candidate
    print(f"command: .venv/bin/python benchmarks/overhead.py --routes {args.routes}")
    print(f"candidates: {n}, study wall time {total:.2f} s (includes set-up and final summary)")
    print(f"parent time outside candidate processes, all included (set-up, one-time imports of "
          f"scipy etc., summary) / candidates: {book * 1000:.1f} ms")
    med = statistics.median(steady)
    print(f"bookkeeping per candidate in steady state (candidates 3..{n}: ask, store commits, gate, "
          f"speed-up CI, tell, progress): median {med * 1000:.1f} ms, max {max(steady) * 1000:.1f} ms"
          f"  (target <= 50 ms: {'met' if med <= 0.05 else 'NOT met'})")
    print(f"process start-up per candidate (spawn + imports): median {statistics.median(startup) * 1000:.0f} ms")
    print(f"child extra per candidate (inputs, outputs for the gate, result): median "
          f"{statistics.median(child_extra) * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
