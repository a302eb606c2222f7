#!/usr/bin/env python3
"""A test executable that follows trtexec 11.1's documented child protocol (reference §3).

It builds nothing: it exists so the gptuner trtexec driver is exercised through real processes,
real exit codes, real signals and real files. Behaviour is selected by route values:

  -kgen:codegen:cuda_tile=0|1   success (gpu_time_ms 0.50 / 0.40), result file + engine written
  -kgen:codegen:cuda_tile=2     dies by SIGSEGV before writing anything
  -kgen:codegen:cuda_tile=3     "build failure": exit 1, no result file
  -match_ragged_mha=on          accuracy failure: result with accuracy_failed=true, exit 1
  -kgen:tiling=2                unparsable result file, exit 0
  -kgen:tiling=0                hangs (sleeps 60 s) - for timeouts
  -copy_ppg=off                 exits 0 but reports gpu_time_ms 0 (inference skipped)

Modes: --help, --helpBuildRoute, a child (--setBuildRoute), a run of a saved engine
(--loadEngine with --tuningResultFile / --exportOutput), and a tuning run (--tuneBuildRoutes)
that appends tuning-cache rows one by one. FAKE_TRTEXEC_NO_TUNE=1 hides --tuneBuildRoutes.
"""

import json
import os
import signal
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
BANNER = "&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106] # trtexec"


def log(msg, level="I"):
    print(f"[08/20/2026-10:00:00] [{level}] {msg}", flush=True)


def flags(argv):
    out = {}
    for a in argv:
        if a.startswith("--"):
            k, _, v = a.partition("=")
            out.setdefault(k, []).append(v)
    return out


def route_dict(route):
    return dict(t.split("=", 1) for t in route.split())


def outcome(route):
    r = route_dict(route)
    if r.get("-kgen:tiling") == "0":
        return "hang"
    if r.get("-kgen:codegen:cuda_tile") == "2":
        return "segv"
    if r.get("-kgen:codegen:cuda_tile") == "3":
        return "build_fail"
    if r.get("-match_ragged_mha") == "on":
        return "accuracy"
    if r.get("-kgen:tiling") == "2":
        return "garbage"
    if r.get("-copy_ppg") == "off":
        return "zero_time"
    return "ok"


def gpu_time(route):
    return 0.5 if route_dict(route).get("-kgen:codegen:cuda_tile") == "0" else 0.4


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def child(f):
    route = f["--setBuildRoute"][-1]
    engine = f.get("--saveEngine", [""])[-1]
    result = f.get("--tuningResultFile", [""])[-1]
    log(f"Using tuning build route: {route}")
    kind = outcome(route)
    if kind == "hang":
        time.sleep(60)
    if kind == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "build_fail":
        log("Error[10]: IBuilder::buildSerializedNetwork: could not find any implementation", "E")
        log("Engine could not be created from network", "E")
        return 1
    if engine:
        write(engine, json.dumps({"fake_engine_for_route": route}))
    if kind == "garbage":
        write(result, '{"gpu_time_ms": 0.4, "accuracy_fa')
        return 0
    failed = kind == "accuracy"
    loss = 0.5 if failed else 0.0
    log(f"Accuracy loss for tensor out (L0): {loss:.6f}" + (" [FAIL: >= threshold 0.001000]" if failed else ""))
    if failed:
        log("Accuracy validation FAILED: one or more tensors exceeded the threshold.", "E")
    t = 0.0 if kind == "zero_time" else gpu_time(route)
    if result:
        write(result, json.dumps({"gpu_time_ms": t, "accuracy_failed": failed, "accuracy_loss": {"out": loss}}, indent=2))
    return 1 if failed else 0


def run_engine(f):
    engine = f["--loadEngine"][-1]
    with open(engine) as fh:
        route = json.load(fh)["fake_engine_for_route"]
    inputs = {}
    for spec in f.get("--loadInputs", [""])[-1].split(","):
        if spec:
            name, _, path = spec.rpartition(":")
            with open(path, "rb") as fh:
                data = fh.read()
            inputs[name.strip("'")] = [float(b) for b in data[:8]]
    result = f.get("--tuningResultFile", [""])[-1]
    if result:
        write(result, json.dumps({"gpu_time_ms": gpu_time(route), "accuracy_failed": False, "accuracy_loss": {}}))
    out = f.get("--exportOutput", [""])[-1]
    if out:
        total = sum(sum(v) for v in inputs.values())
        write(out, json.dumps([{"name": "out", "dimensions": "1x2", "values": [total, float(len(inputs))]}]))
    return 0


def tune(f):
    expr = f["--tuneBuildRoutes"][-1]
    cache = f.get("--tuningCacheFile", ["best_config.json"])[-1]
    terms = [t.split("=", 1) for t in expr.split()]
    with open(os.path.join(HERE, "trt_knobs_small.json")) as fh:
        defaults = {k["option"]: k["default_value"] for k in json.load(fh)["tuner_options"]}
    base = []
    for name, vals in terms:
        listed = vals.strip("[]").split("|")
        base.append((name, defaults.get(name, listed[0]) if vals.startswith("[") else vals))
    routes = [base]
    for i in range(len(terms) - 1, -1, -1):
        name, vals = terms[i]
        if vals.startswith("["):
            for v in vals.strip("[]").split("|"):
                if v != base[i][1]:
                    routes.append(base[:i] + [(name, v)] + base[i + 1 :])
    header = {"tuner_version": "2.19.45", "accuracy_algorithm": "L0",
              "accuracy_parameter": {"atol": 1e-05, "rtol": 1e-05, "epsilon": 0.0},
              "searching_algorithm": "fast", "command_line": "trtexec", "default_build_route": "",
              "tuning_expr": expr, "files": {}, "argv": sys.argv[1:]}
    with open(cache, "w") as fh:
        fh.write(json.dumps(header, separators=(",", ":")) + "\n")
    log(f"Tuning phase1: {len(routes)} iterations.")
    best = None
    for i, r in enumerate(routes):
        route = " ".join(f"{n}={v}" for n, v in r)
        print(f"&&&& TASK_BEGIN [iter={i}] BuildRoute = '{route}'", flush=True)
        kind = outcome(route)
        crash = kind in ("segv", "build_fail", "garbage", "hang")
        msg = "child killed by signal 11 (SIGSEGV)" if kind == "segv" else ""
        row = {"iter": i, "build_route": route, "crash": crash, "error_message": msg,
               "accuracy_loss": None if crash else {"out": 0.0}, "gpu_time": None if crash else gpu_time(route)}
        with open(cache, "a") as fh:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")
        print(f"&&&& TASK_{'ABORT' if crash else 'END'} [iter={i}] BuildRoute = '{route}'", flush=True)
        if not crash and (best is None or row["gpu_time"] < best[1]):
            best = (route, row["gpu_time"])
        time.sleep(float(os.environ.get("FAKE_TRTEXEC_ROW_DELAY", "0.05")))
    if best is None:
        log("No tuning iteration succeeded; no engine written.", "E")
        return 1
    log(f"Best iteration: {best[0]} (gpu_time_ms={best[1]})")
    return 0


def main(argv):
    print(BANNER + " " + " ".join(argv), flush=True)
    f = flags(argv)
    if "--help" in f:
        print("=== Tuning Options ===")
        if os.environ.get("FAKE_TRTEXEC_NO_TUNE") != "1":
            print("  --tuneBuildRoutes=<expr>   Tune build routes")
        print("  --setBuildRoute=<route>    Build with one route")
        return 0
    if "--helpBuildRoute" in f:
        with open(os.path.join(HERE, "trt_knobs_small.json")) as fh:
            print(json.dumps(json.load(fh), indent=2))
        return 0
    if "--tuneBuildRoutes" in f:
        return tune(f)
    if "--setBuildRoute" in f:
        return child(f)
    if "--loadEngine" in f:
        return run_engine(f)
    log("Unknown invocation", "E")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
