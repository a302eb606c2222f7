"""Record a REAL full sweep of ONNX Runtime routes, one fresh process per route (side script).

This is how the test fixture ``tests/data/recorded_sweep/`` was made. The benchmark inputs in
``benchmarks/data/ort_*_full.json`` are real gptuner studies of the bundled samples instead,
recorded with ``gptuner tune --search full`` (commands in ``docs/benchmarks.md``). For each
route of the ``full`` expansion of a small ORT knob space, the parent spawns
``python record_sweep.py --child`` (a fresh interpreter), which builds an ``InferenceSession``
with the route's session options on the route's (pre-quantised) model, checks its outputs
against the fp32 reference (l2 = MSE and max abs loss, top-1 accuracy for the digits MLP) and
times it: 0.2 s warm-up, then ``--samples`` samples of at least 10 ms of back-to-back calls
each (``time.perf_counter_ns``). The parent turns the samples into :class:`LatencyStats`,
speed-ups (baseline median / median) with a bootstrap 95 % CI of the ratio of medians, and
writes a recording JSON (``gptuner_core.recording.Recording``) with ``CandidateRecord`` dicts.

Models (built here, no downloads):

* ``mlp``: sklearn ``MLPClassifier(512, 512)`` trained on ``load_digits`` (64 features),
  exported by hand to ONNX Gemm/Relu; batch 64; accuracy on the 540 held-out digits.
* ``cnn``: a 4-conv CNN (3x64x64 input, He-initialised weights, seeded), batch 4; losses vs fp32.

Int8 variants come from ``onnxruntime.quantization`` (``quantize_dynamic`` and QDQ
``quantize_static`` with 16 calibration batches), built once by the parent.

Usage::

    python benchmarks/record_sweep.py --model mlp --out benchmarks/data/ort_mlp_digits_full.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


SPACES = {
    "mlp": {
        "knobs": [
            ("-ort:precision", ["fp32", "int8_dynamic", "int8_qdq"], "fp32"),
            ("-ort:quant_per_channel", ["0", "1"], "0"),
            ("-ort:quant_reduce_range", ["0", "1"], "0"),
            ("-ort:graph_optimization_level", ["disable", "basic", "extended", "all"], "all"),
            ("-ort:intra_op_num_threads", ["0", "1"], "0"),
            ("-ort:execution_mode", ["sequential", "parallel"], "sequential"),
        ],
        "batch": 64,
    },
    "cnn": {
        "knobs": [
            ("-ort:precision", ["fp32", "int8_qdq", "int8_dynamic"], "fp32"),
            ("-ort:quant_per_channel", ["0", "1"], "0"),
            ("-ort:graph_optimization_level", ["disable", "basic", "extended", "layout", "all"], "all"),
            ("-ort:intra_op_num_threads", ["0", "1"], "0"),
            ("-ort:disable_nchwc", ["0", "1"], "0"),
        ],
        "batch": 4,
    },
}

HELP = {
    "-ort:precision": "model transform: fp32, dynamic int8 (MatMulInteger/ConvInteger) or static QDQ int8",
    "-ort:quant_per_channel": "int8 transforms: per-channel weight scales",
    "-ort:quant_reduce_range": "int8 transforms: 7-bit weights (reduce_range)",
    "-ort:graph_optimization_level": "SessionOptions.graph_optimization_level",
    "-ort:intra_op_num_threads": "SessionOptions.intra_op_num_threads (0 = all cores)",
    "-ort:execution_mode": "SessionOptions.execution_mode",
    "-ort:disable_nchwc": "session config optimization.disable_specified_optimizers=NchwcTransformer",
}


def knob_db_json(model: str) -> dict:
    return {
        "tuner_version": "ort-record-1",
        "tuner_options": [
            {
                "option": name,
                "allowed_values": f"{name}=[{'|'.join(values)}]",
                "default_value": default,
                "help": HELP[name],
            }
            for name, values, default in SPACES[model]["knobs"]
        ],
    }


# -- models ----------------------------------------------------------------------------------
def _mlp(work: Path):
    import numpy as np
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.3, random_state=0)
    clf = MLPClassifier(hidden_layer_sizes=(512, 512), max_iter=60, random_state=0)
    clf.fit(xtr, ytr)
    nodes, inits = [], []
    prev = "input"
    for i, (w, b) in enumerate(zip(clf.coefs_, clf.intercepts_, strict=True)):
        inits += [
            numpy_helper.from_array(w.astype(np.float32), f"W{i}"),
            numpy_helper.from_array(b.astype(np.float32), f"B{i}"),
        ]
        out = "logits" if i == len(clf.coefs_) - 1 else f"h{i}"
        gemm_out = out if out == "logits" else f"g{i}"
        nodes.append(helper.make_node("Gemm", [prev, f"W{i}", f"B{i}"], [gemm_out]))
        if out != "logits":
            nodes.append(helper.make_node("Relu", [gemm_out], [out]))
        prev = out
    graph = helper.make_graph(
        nodes,
        "mlp_digits",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = work / "fp32.onnx"
    onnx.save(model, path)
    batch = SPACES["mlp"]["batch"]
    return path, xtr[: batch * 16], xte, yte


def _cnn(work: Path):
    import numpy as np
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits = [], []
    prev, cin = "input", 3
    for i, (cout, stride) in enumerate([(32, 1), (64, 2), (64, 1), (128, 2)]):
        w = rng.normal(0, (2.0 / (cin * 9)) ** 0.5, (cout, cin, 3, 3)).astype(np.float32)
        inits += [
            numpy_helper.from_array(w, f"W{i}"),
            numpy_helper.from_array(rng.normal(0, 0.05, cout).astype(np.float32), f"B{i}"),
        ]
        nodes.append(
            helper.make_node(
                "Conv", [prev, f"W{i}", f"B{i}"], [f"c{i}"], pads=[1, 1, 1, 1],
                strides=[stride, stride], kernel_shape=[3, 3],
            )
        )
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        prev, cin = f"r{i}", cout
    nodes.append(helper.make_node("GlobalAveragePool", [prev], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"]))
    inits += [
        numpy_helper.from_array(rng.normal(0, 0.1, (128, 10)).astype(np.float32), "Wfc"),
        numpy_helper.from_array(np.zeros(10, np.float32), "Bfc"),
    ]
    nodes.append(helper.make_node("Gemm", ["flat", "Wfc", "Bfc"], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "cnn_random",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 64, 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = work / "fp32.onnx"
    onnx.save(model, path)
    x = rng.random((64, 3, 64, 64), dtype=np.float32)
    return path, x, x[:16], None


def build_variants(model: str, work: Path) -> tuple[dict[str, str], Path, Path | None]:
    """fp32 + every int8 variant the space can name; returns (variant -> path, feeds, labels)."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader
    from onnxruntime.quantization import QuantFormat
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic
    from onnxruntime.quantization import quantize_static

    fp32, calib, evalx, evaly = (_mlp if model == "mlp" else _cnn)(work)
    batch = SPACES[model]["batch"]

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter([{"input": calib[i : i + batch]} for i in range(0, len(calib), batch)])

        def get_next(self):
            return next(self.it, None)

    names = {k[0] for k in SPACES[model]["knobs"]}
    rrs = ("0", "1") if "-ort:quant_reduce_range" in names else ("0",)
    variants = {"fp32": str(fp32)}
    for pc in ("0", "1"):
        for rr in rrs:
            dyn = work / f"dyn_{pc}{rr}.onnx"
            quantize_dynamic(fp32, dyn, per_channel=pc == "1", reduce_range=rr == "1",
                             weight_type=QuantType.QInt8)
            variants[f"int8_dynamic:{pc}{rr}"] = str(dyn)
            qdq = work / f"qdq_{pc}{rr}.onnx"
            quantize_static(fp32, qdq, Reader(), quant_format=QuantFormat.QDQ,
                            per_channel=pc == "1", reduce_range=rr == "1",
                            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                            op_types_to_quantize=["Conv", "MatMul", "Gemm"])
            variants[f"int8_qdq:{pc}{rr}"] = str(qdq)
    feeds = work / "feeds.npz"
    np.savez(feeds, latency=evalx[:batch], eval=evalx,
             **({"labels": evaly} if evaly is not None else {}))
    return variants, feeds, None


# -- child -----------------------------------------------------------------------------------
def child(job: dict) -> dict:
    import numpy as np
    import onnxruntime as ort

    route = job["route"]
    t0 = time.perf_counter()
    so = ort.SessionOptions()
    so.log_severity_level = 3
    level = route.get("-ort:graph_optimization_level", "all")
    levels = {
        "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "layout": getattr(ort.GraphOptimizationLevel, "ORT_ENABLE_LAYOUT", None),
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    so.graph_optimization_level = levels[level]
    so.intra_op_num_threads = int(route.get("-ort:intra_op_num_threads", "0"))
    if route.get("-ort:execution_mode", "sequential") == "parallel":
        so.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    if route.get("-ort:disable_nchwc", "0") == "1":
        so.add_session_config_entry("optimization.disable_specified_optimizers", "NchwcTransformer")
    sess = ort.InferenceSession(job["model_path"], so, providers=["CPUExecutionProvider"])
    build_s = time.perf_counter() - t0
    data = np.load(job["feeds"])
    out = sess.run(None, {"input": data["eval"]})[0]
    ref = np.load(job["reference"])["logits"]
    losses = {
        "l2": float(np.mean((out - ref) ** 2)),
        "lInf": float(np.max(np.abs(out - ref))),
    }
    task = None
    if "labels" in data.files:
        task = float(np.mean(out.argmax(1) == data["labels"]))
    feed = {"input": data["latency"]}
    end = time.perf_counter() + 0.2
    calls = 0
    while time.perf_counter() < end:
        sess.run(None, feed)
        calls += 1
    per_call = 0.2 / max(calls, 1)
    n = max(1, int(0.010 / per_call))
    samples = []
    t1 = time.perf_counter()
    for _ in range(job["samples"]):
        s = time.perf_counter_ns()
        for _ in range(n):
            sess.run(None, feed)
        samples.append((time.perf_counter_ns() - s) / n / 1e6)
    return {
        "build_s": build_s, "measure_s": time.perf_counter() - t1, "samples_ms": samples,
        "calls_per_sample": n, "warmup_calls": calls, "losses": losses, "task": task,
        "outputs": out.tolist() if job.get("want_outputs") else None,
    }


# -- parent ----------------------------------------------------------------------------------
def _stats(samples: list[float], n_calls: int, warm: int, wall: float) -> dict:
    import numpy as np

    a = np.asarray(samples)
    rng = np.random.default_rng(0)
    boots = np.median(rng.choice(a, (1000, a.size)), axis=1)
    return {
        "median_ms": float(np.median(a)), "mean_ms": float(a.mean()), "min_ms": float(a.min()),
        "p5_ms": float(np.percentile(a, 5)), "p95_ms": float(np.percentile(a, 95)),
        "p99_ms": float(np.percentile(a, 99)), "cv": float(a.std(ddof=1) / a.mean()),
        "ci_low_ms": float(np.percentile(boots, 2.5)), "ci_high_ms": float(np.percentile(boots, 97.5)),
        "n_samples": int(a.size), "calls_per_sample": n_calls, "warmup_calls": warm,
        "stop_reason": "fixed sample count", "wall_s": wall,
    }


def _speedup_ci(base: list[float], cand: list[float]) -> tuple[float, float]:
    import numpy as np

    rng = np.random.default_rng(1)
    b, c = np.asarray(base), np.asarray(cand)
    rb = np.median(rng.choice(b, (1000, b.size)), axis=1)
    rc = np.median(rng.choice(c, (1000, c.size)), axis=1)
    ratio = rb / rc
    return float(np.percentile(ratio, 2.5)), float(np.percentile(ratio, 97.5))


def record(model: str, out: Path, samples: int, limit: int | None) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import numpy as np
    import onnxruntime as ort

    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase

    db = KnobDatabase.from_json(knob_db_json(model))
    text = " ".join(f"{n}=[{'|'.join(v)}]" for n, v, _ in SPACES[model]["knobs"])
    expr = Expression.parse(text, db)
    base = expr.baseline()
    routes = [base] + [r for r in expr.iter_routes("full") if r.key(db) != base.key(db)]
    if limit:
        routes = routes[:limit]
    records: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        variants, feeds, _ = build_variants(model, work)
        s = ort.InferenceSession(variants["fp32"], providers=["CPUExecutionProvider"])
        ref = s.run(None, {"input": np.load(feeds)["eval"]})[0]
        np.savez(work / "ref.npz", logits=ref)
        base_samples: list[float] | None = None
        for number, route in enumerate(routes):
            r = route.as_dict()
            prec = r.get("-ort:precision", "fp32")
            key = "fp32" if prec == "fp32" else (
                f"{prec}:{r.get('-ort:quant_per_channel', '0')}{r.get('-ort:quant_reduce_range', '0')}"
            )
            job = {"route": r, "model_path": variants[key], "feeds": str(feeds),
                   "reference": str(work / "ref.npz"), "samples": samples}
            started = time.time()
            rec: dict = {"number": number, "requested_route": str(route),
                         "effective_route": str(route), "started_at": started,
                         "strategy_info": {"search": "full"}}
            try:
                proc = subprocess.run([sys.executable, __file__, "--child"], input=json.dumps(job),
                                      capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                rec.update(state="TIMED_OUT", error="candidate exceeded 300 s")
            else:
                if proc.returncode != 0:
                    tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
                    rec.update(state="CRASHED" if proc.returncode < 0 else "BUILD_FAILED",
                               error=tail[0][:500])
                else:
                    res = json.loads(proc.stdout.strip().splitlines()[-1])
                    smp = [round(x, 5) for x in res["samples_ms"]]
                    stats = _stats(smp, res["calls_per_sample"], res["warmup_calls"], res["measure_s"])
                    if base_samples is None:
                        base_samples = smp
                    med0 = float(statistics.median(base_samples))
                    rec.update(
                        state="COMPLETE", build_time_s=round(res["build_s"], 4),
                        measure_time_s=round(res["measure_s"], 4), latency=stats, samples_ms=smp,
                        speedup=med0 / stats["median_ms"], speedup_ci=list(_speedup_ci(base_samples, smp)),
                        accuracy={"metric": "l2", "losses": {"logits": res["losses"]["l2"]},
                                  "task_metric": res["task"],
                                  "task_metric_name": "top1" if res["task"] is not None else None},
                        extra={"lInf": res["losses"]["lInf"]},
                    )
            rec["finished_at"] = time.time()
            rec.setdefault("phase", "done")
            records.append(rec)
            print(f"[{number}/{len(routes)}] {route} -> {rec.get('state')} "
                  f"{rec.get('latency', {}).get('median_ms', float('nan')):.4f} ms", flush=True)
    doc = {
        "format": "gptuner-recording/1",
        "how": "benchmarks/record_sweep.py: real ONNX Runtime sessions, one fresh process per route",
        "knob_db": db.to_json(),
        "config": {"expression": str(expr), "search": "full", "model": f"{model} (record_sweep.py)",
                   "backend": "onnxruntime", "batch_size": SPACES[model]["batch"]},
        "environment": {"onnxruntime": ort.__version__, "python": platform.python_version(),
                        "machine": platform.machine(), "cpu_count": os.cpu_count(),
                        "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%S")},
        "candidates": records,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, separators=(",", ":")))
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(records)} candidates)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", choices=sorted(SPACES), default="mlp")
    p.add_argument("--out", type=Path)
    p.add_argument("--samples", type=int, default=15)
    p.add_argument("--limit", type=int, default=None, help="only the first N routes (fixtures)")
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(json.loads(sys.stdin.read()))))
        return 0
    if a.out is None:
        p.error("--out is required")
    record(a.model, a.out, a.samples, a.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
