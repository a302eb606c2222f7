"""Write a synthetic study through the real store API, for dashboard tests, the scale benchmark
and screenshots when no tuner run is at hand. No streamlit here.

The records are labelled synthetic in the study config (``"synthetic": true``); every value is
generated from a seeded model of knob effects, so pages show realistic spreads, failures of every
kind, accuracy failures, per-layer rows and candidate logs.
"""

from __future__ import annotations

import time
from pathlib import Path

from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats


KNOBS = {
    "-ort:graph_optimization_level": ("0", "1", "2", "99"),
    "-ort:intra_op_threads": ("1", "2"),
    "-ort:execution_mode": ("sequential", "parallel"),
    "-ort:fp16_weights": ("0", "1"),
}
DEFAULTS = {"-ort:graph_optimization_level": "99", "-ort:intra_op_threads": "1",
            "-ort:execution_mode": "sequential", "-ort:fp16_weights": "0"}
LAYERS = ("conv1", "relu1", "conv2", "pool", "gemm", "softmax")


def _route(values: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items())


def write_synthetic_study(
    study_dir: str | Path,
    n: int = 40,
    *,
    seed: int = 0,
    samples: int = 60,
    status: str = "finished",
    epsilon: float = 1e-3,
    write_logs: bool = True,
) -> Path:
    """Create ``study_dir`` with ``n`` candidates (number 0 = default route) and a winner."""
    import numpy as np

    from gptuner_core.storage import open_store

    rng = np.random.default_rng(seed)
    study = Path(study_dir)
    study.mkdir(parents=True, exist_ok=True)
    config = {
        "model": "assets/cnn_digits.onnx", "backend": "onnxruntime",
        "expression": " ".join(f"{k}=[{'|'.join(v)}]" for k, v in KNOBS.items()),
        "search": "random", "metric": "l2", "epsilon": epsilon, "dataset": None,
        "max_task_drop": None, "synthetic": True,
    }
    fingerprint = {"model_sha256": "synthetic", "backend": "onnxruntime", "backend_version": "synthetic",
                   "host": "synthetic-host", "device": "cpu"}
    started = time.time() - 5.0 * n
    base_ms = 1.0
    records: list[CandidateRecord] = []
    with open_store(study) as store:
        store.init_study(config, fingerprint)
        for i in range(n):
            values = dict(DEFAULTS) if i == 0 else {k: str(rng.choice(v)) for k, v in KNOBS.items()}
            factor = {"0": 1.35, "1": 1.1, "2": 1.0, "99": 1.0}[values["-ort:graph_optimization_level"]]
            factor *= 0.8 if values["-ort:intra_op_threads"] == "2" else 1.0
            factor *= 0.93 if values["-ort:fp16_weights"] == "1" else 1.0
            roll = rng.random() if i else 1.0
            t0 = started + 5.0 * i
            kw: dict = {"number": i, "requested_route": _route(values), "started_at": t0,
                        "finished_at": t0 + 4.0, "strategy_info": {"source": "synthetic"}}
            if write_logs:
                log = study / "candidates" / f"{i:05d}" / "log.txt"
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(f"[synthetic] candidate {i}\nroute: {kw['requested_route']}\n")
                kw["log_path"] = str(log)
            if roll < 0.04:
                rec = CandidateRecord(state=CandidateState.CRASHED, build_time_s=0.3,
                                      error="child killed by signal 11 (SIGSEGV)", **kw)
            elif roll < 0.07:
                rec = CandidateRecord(state=CandidateState.BUILD_FAILED, build_time_s=0.1,
                                      error="BackendError: unsupported option combination", **kw)
            elif roll < 0.09:
                rec = CandidateRecord(state=CandidateState.TIMED_OUT, build_time_s=600.0,
                                      error="build exceeded 600 s", **kw)
            else:
                med = base_ms * factor * float(rng.normal(1.0, 0.02))
                s = np.abs(rng.normal(med, med * 0.03, size=samples))
                lo, hi = np.percentile(s, [47.5, 52.5])
                loss = (2e-3 if values["-ort:fp16_weights"] == "1" else 1e-6) * float(rng.lognormal(0, 0.8))
                acc = AccuracyResult(metric="l2", losses={"logits": loss, "probs": loss / 10})
                lat = LatencyStats(
                    median_ms=float(np.median(s)), mean_ms=float(s.mean()), min_ms=float(s.min()),
                    p5_ms=float(np.percentile(s, 5)), p95_ms=float(np.percentile(s, 95)),
                    p99_ms=float(np.percentile(s, 99)), cv=float(s.std() / s.mean()),
                    ci_low_ms=float(lo), ci_high_ms=float(hi), n_samples=samples,
                )
                sp = base_ms / lat.median_ms if i else 1.0
                state = CandidateState.ACCURACY_FAILED if loss >= epsilon else CandidateState.COMPLETE
                layers = [{"name": name, "op": name.rstrip("0123456789"),
                           "time_ms": round(lat.median_ms * w, 5)}
                          for name, w in zip(LAYERS, rng.dirichlet(np.ones(len(LAYERS))), strict=True)]
                rec = CandidateRecord(
                    state=state, effective_route=kw["requested_route"], build_time_s=0.2,
                    measure_time_s=1.5, accuracy=acc, latency=lat, samples_ms=tuple(float(x) for x in s),
                    speedup=sp, speedup_ci=(sp * 0.97, sp * 1.03),
                    artifact_path=str(study / "candidates" / f"{i:05d}" / "model.onnx"),
                    artifact_sha256=f"{rng.integers(0, 2**63):016x}" * 4, artifact_size=int(1e5),
                    extra={"layers": layers}, **kw,
                )
            store.put_candidate(rec)
            records.append(rec)
        ok = [r for r in records if r.state is CandidateState.COMPLETE]
        best = min(ok, key=lambda r: r.latency.median_ms)
        store.set_meta("status", status)
        store.set_meta("status_message", "synthetic study")
        store.set_meta("progress", {"done": n, "total": n, "current": None, "phase": "",
                                    "started_at": started, "eta_s": 0})
        store.set_meta("winner", {"number": best.number, "speedup": best.speedup,
                                  "ci": list(best.speedup_ci), "significant": best.number != 0,
                                  "message": f"#{best.number} is {best.speedup:.3f}x faster than default"})
    return study
