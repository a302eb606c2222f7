"""The tuner's own time per candidate, and the price of isolation: spawn and launcher side by side.

Runs the same real study (ONNX Runtime, real processes, real SQLite) over a tiny model with a cheap
measurement budget twice in one run: once with every candidate in a spawned interpreter
(``GPTUNER_START_METHOD=spawn``) and once forked from the pre-imported launcher
(``GPTUNER_START_METHOD=launcher``). The start method is chosen through
``gptuner_core.engine.process.isolation``'s own setting, and every figure comes from what the study stores
(``started_at``, the child's ``phase_times``), so nothing in the tuner is patched and the benchmark
keeps working wherever the tuner calls ``run_isolated``. Per variant and candidate:

* process start-up: from the request to the child entering its first phase (``build``):
  process creation, imports, loading the backend; measured with the child's own clock;
* bookkeeping: the parent's time between two candidates outside the child process (strategy
  ask/tell, store commits, accuracy gate, speed-up CI, progress): the engine's own overhead
  (target <= 50 ms);
* child extra: child time that is neither start-up, build nor measurement.

Both variants run in the same process, one after the other, so they share the machine's load;
the ratio of the start-up medians is the figure to compare (target: spawn / launcher >= 4).

Usage: PYTHONPATH=$PWD .venv/bin/python benchmarks/overhead.py [--routes 16]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

VARIANTS = ("spawn", "launcher")


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-9 * len(ordered) // 10) - 1)]  # nearest rank


def _run(variant: str, routes: int, model: Path, dataset: Path, work: Path) -> dict[str, object]:
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.loop.tuner import Tuner
    from gptuner_core.engine.process import isolation
    from gptuner_core.engine.process import launcher
    from gptuner_core.storage import open_store

    os.environ[isolation.START_METHOD_ENV] = variant
    launcher.shutdown()  # the launcher variant pays its launcher's start in its first candidate
    cfg = StudyConfig(
        model=str(model), backend="gptuner_core.testing.faulty_backend:FaultyBackend",
        expression="-fault:sleep_ms=[0|100|200|300] -fault:label=[a|b] -ort:threads=[0|1]",
        search="full", dataset=str(dataset), batch_size=4, epsilon=1e-3,
        measurement={"warmup_s": 0.0, "warmup_calls": 1, "min_samples": 5, "max_samples": 5,
                     "max_time_s": 2.0},  # 5 samples; the cap only under heavy load
        revalidate_top_k=0, drift_every=0, max_candidates=routes,
    )
    t0 = time.perf_counter()
    Tuner(cfg, work / variant).run()
    total = time.perf_counter() - t0
    with open_store(work / variant, readonly=True) as store:
        recs = sorted(store.candidates(), key=lambda r: r.number)
    times = [getattr(r, "phase_times", None) or r.extra.get("phase_times", {}) for r in recs]
    child = [sum(pt.values()) for pt in times]
    startup = [pt.get("start", 0.0) for pt in times]
    extra = [c - pt.get("start", 0.0) - (r.build_time_s or 0) - (r.measure_time_s or 0)
             for c, pt, r in zip(child, times, recs, strict=True)]
    book = [recs[i + 1].started_at - recs[i].started_at - child[i] for i in range(len(recs) - 1)]
    return {"n": len(recs), "total": total, "startup": startup, "book": book[2:] or book,
            "extra": extra, "child": child}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--routes", type=int, default=16, help="candidates per variant (<= 16)")
    args = ap.parse_args()
    import numpy as np
    from engine_tests.conftest import make_tiny_model

    fallbacks: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: fallbacks.append(record.getMessage())  # type: ignore[method-assign]
    logging.getLogger("gptuner_core.engine.process.isolation").addHandler(handler)
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="gptuner-overhead-"))
    model = make_tiny_model(work / "tiny.onnx")
    np.savez(work / "ds.npz", x=np.random.default_rng(0).normal(size=(32, 16)).astype(np.float32))
    res = {v: _run(v, args.routes, model, work / "ds.npz", work) for v in VARIANTS}

    print(f"command: PYTHONPATH=$PWD .venv/bin/python benchmarks/overhead.py --routes {args.routes}")
    load = "/".join(f"{x:.2f}" for x in (load_before[0], os.getloadavg()[0]))
    print(f"machine: {os.cpu_count()} CPUs, 1-minute load average before/after: {load}")
    ms = lambda s: f"{s * 1000:.0f} ms"  # noqa: E731
    head = f"{'':58}" + "".join(f"{v:>12}" for v in VARIANTS)
    print(head)
    rows = [
        ("candidates", lambda r: str(r["n"])),
        ("study wall time", lambda r: f"{r['total']:.2f} s"),
        ("process start-up per candidate: median", lambda r: ms(statistics.median(r["startup"]))),
        ("process start-up per candidate: p90", lambda r: ms(_p90(r["startup"]))),
        ("process start-up: first candidate (launcher start incl.)", lambda r: ms(r["startup"][0])),
        ("child process wall time per candidate: median", lambda r: ms(statistics.median(r["child"]))),
        ("child extra (inputs, outputs, result): median", lambda r: ms(statistics.median(r["extra"]))),
        ("bookkeeping per candidate, steady state: median",
         lambda r: f"{statistics.median(r['book']) * 1000:.1f} ms"),
        ("bookkeeping per candidate, steady state: max", lambda r: f"{max(r['book']) * 1000:.1f} ms"),
    ]
    for label, cell in rows:
        print(f"{label:58}" + "".join(f"{cell(res[v]):>12}" for v in VARIANTS))
    sp, la = (res[v]["startup"] for v in VARIANTS)
    ratio = statistics.median(sp) / statistics.median(la)
    print(f"start-up ratio spawn / launcher: median {ratio:.1f}x, p90 {_p90(sp) / _p90(la):.1f}x "
          f"(target >= 4x: {'met' if ratio >= 4 else 'NOT met'})")
    book = statistics.median(res["launcher"]["book"])
    print(f"bookkeeping target <= 50 ms: {'met' if book <= 0.05 else 'NOT met'}")
    for line in sorted(set(fallbacks)):
        print(f"WARNING: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
