#!/usr/bin/env python3
"""A test double of the trtexec 11.1 *process*, faithful to its sources for what gptuner relies on.

It builds nothing. Every message, key, file name and exit code below is trtexec's (the facts and
their source lines are in ``tests/data/trt_trtexec_facts.json``, extracted from NVIDIA/TensorRT
a892d222); the test ``tests/conformance_tests/test_trtexec_facts.py`` checks the fake against it.

Modes, as in trtexec: ``--help``; ``--helpBuildRoute`` (the knob database string printed
verbatim); a single build (``--onnx --setBuildRoute [--saveEngine] [--tuningResultFile]``); a run
of a saved engine (``--loadEngine`` with ``--tuningResultFile``/``--exportOutput``/
``--dumpRawBindingsToFile``); and a tuning run (``--tuneBuildRoutes`` with fast/full/mixed, or
``--continue``) whose parent forks+execs one child per route, classifies it as trtexec does and
appends cache rows. Unknown flags are refused like trtexec's ``Unknown option``.

What the route values make a child do (the fake's only invention, standing in for the GPU):

  -kgen:codegen:cuda_tile=0|1   success (gpu_time_ms 0.50 / 0.40)
  -kgen:codegen:cuda_tile=2     dies by SIGSEGV before writing anything
  -kgen:codegen:cuda_tile=3     build failure: exit 1, no result file
  -match_ragged_mha=on          loss 0.5 per output (an accuracy failure when references are given)
  -kgen:tiling=2                writes a truncated result file, exit 0
  -kgen:tiling=0                hangs (sleeps 60 s): a hung child, which real trtexec would wait for
                                forever; only gptuner's own timeout ends it
  -copy_ppg=off                 exits 0 but reports gpu_time_ms 0
  -reshape_ppg=off              faster (gpu_time_ms 0.30)

FAKE_TRTEXEC_NO_TUNE=1 hides --tuneBuildRoutes from --help (a trtexec without the tuner).
"""

import json
import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time


HERE = os.path.dirname(os.path.abspath(__file__))
FACTS = json.load(open(os.path.join(HERE, "trt_trtexec_facts.json")))
KNOWN_FLAGS = set(FACTS["flags"]["names"])
STRIP = tuple(FACTS["tuning_only_flags"]["names"])
DISPLAY = {cli: FACTS["accuracy_algorithms"]["enum_to_display"][enum]
           for cli, enum in FACTS["accuracy_algorithms"]["cli_to_enum"].items()}
DB_FILE = os.environ.get("FAKE_TRTEXEC_DB", os.path.join(HERE, "trt_knobs_small.json"))


def log(msg, level="I"):
    print(f"[08/20/2026-10:00:00] [{level}] {msg}", flush=True)


def flags(argv):
    out = {}
    for a in argv:
        k, _, v = a.partition("=")
        out.setdefault(k, []).append(v)
    return out


def f32(x):
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def database():
    with open(DB_FILE) as fh:
        text = fh.read()
    data = json.loads(text)
    knobs = [(k["option"], k.get("allowed_values", ""), k.get("default_value", "")) for k in data["tuner_options"]]
    return text, data.get("tuner_version", "unknown"), knobs


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
    if r.get("-kgen:tiling") == "2":
        return "garbage"
    if r.get("-copy_ppg") == "off":
        return "zero_time"
    return "ok"


def gpu_time(route):
    r = route_dict(route)
    if r.get("-reshape_ppg") == "off":
        return 0.3
    return 0.5 if r.get("-kgen:codegen:cuda_tile") == "0" else 0.4


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


# -- a single build (what the tuning parent runs per route) --------------------------------------
def child(f):
    route = f["--setBuildRoute"][-1]
    engine = f.get("--saveEngine", [""])[-1]
    result = f.get("--tuningResultFile", [""])[-1]
    onnx = f.get("--onnx", [""])[-1]
    if not os.path.isfile(onnx):
        log(f"Cannot open ONNX file: {onnx}", "E")
        return 1
    log(f"Using tuning build route: {route}")  # sampleEngines.cpp: before setBuildRoute
    names = {k for k, _, _ in database()[2]}
    if any(t.split("=", 1)[0] not in names for t in route.split()):
        log(f"IBuilderConfig::setBuildRoute failed for: {route}", "E")
        return 1
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
    layers = f.get("--exportLayerInfo", [""])[-1]
    if layers:  # written after setUpInference (trtexec.cpp/sampleReporting.cpp), inspector JSON
        tensor = {"Name": "out", "Location": "Device", "Dimensions": [1, 4], "Format/Datatype": "Row major linear FP32"}
        write(layers, json.dumps({"Layers": [{"Name": "fake_relu", "LayerType": "PointWise", "Inputs": [], "Outputs": [tensor]}],
                                  "Bindings": ["x", "out"]}))
    if kind == "garbage":
        write(result, '{"gpu_time_ms": 0.4, "accuracy_fa')
        return 0
    refs = f.get("--loadRefOutputs", [""])[-1]
    threshold = float(f.get("--accuracyThreshold", ["0"])[-1] or 0)
    algo = DISPLAY[f.get("--accuracyAlgorithm", ["l0"])[-1]]
    losses, failed = {}, False
    for spec in filter(None, refs.split(",")):  # accuracy is validated only against references
        name = spec.rpartition(":")[0].strip("'")
        loss = 0.5 if route_dict(route).get("-match_ragged_mha") == "on" else 0.0
        losses[name] = loss
        line = f"Accuracy loss for tensor {name} ({algo}): {loss:.6f}"
        if threshold > 0 and loss >= threshold:
            line += f" [FAIL: >= threshold {threshold:.6f}]"
            failed = True
        log(line)
    t = 0.0 if kind == "zero_time" else gpu_time(route)
    if result:
        write(result, json.dumps({"gpu_time_ms": t, "accuracy_failed": failed, "accuracy_loss": losses}, indent=2) + "\n")
    if failed:
        log("Accuracy validation FAILED: one or more tensors exceeded the threshold.", "E")
        return 1
    return 0


# -- running a saved engine -----------------------------------------------------------------------
def safe_name(s):
    return "".join(c if (c.isascii() and c.isalnum()) or c in "._-," else "_" for c in s)


def run_engine(f):
    import numpy as np

    with open(f["--loadEngine"][-1]) as fh:
        route = json.load(fh)["fake_engine_for_route"]
    inputs = {}
    for spec in filter(None, f.get("--loadInputs", [""])[-1].split(",")):
        name, _, path = spec.rpartition(":")
        with open(path, "rb") as fh:
            inputs[name.strip("'")] = np.frombuffer(fh.read()[:8], dtype=np.uint8).astype(np.float32)
    result = f.get("--tuningResultFile", [""])[-1]
    if result:
        write(result, json.dumps({"gpu_time_ms": gpu_time(route), "accuracy_failed": False, "accuracy_loss": {}}, indent=2) + "\n")
    total = np.float32(sum(float(v.sum()) for v in inputs.values()))
    out = np.array([[total / np.float32(3), np.nan]], dtype=np.float32)  # not representable in 6 digits
    path = f.get("--exportOutput", [""])[-1]
    if path:  # sampleReporting.cpp exportJSONOutput: values with a plain `os << v`
        values = ", ".join(format(float(v), ".6g") for v in out.ravel())
        write(path, f'[\n  {{ "name" : "out"\n  , "dimensions" : "1x2"\n  , "values" : [ {values} ]\n  }}\n]\n')
    if "--dumpRawBindingsToFile" in f:  # written to the working directory, as trtexec does
        log("Dumping I/O Bindings to RAW Files:")
        for name, arr in inputs.items():
            with open(safe_name(f"{name}.input.{arr.size}.fp32.raw"), "wb") as fh:
                fh.write(arr.tobytes())
        with open(safe_name("out.output.1.2.fp32.raw"), "wb") as fh:
            fh.write(out.tobytes())
    return 0


# -- the tuning parent ----------------------------------------------------------------------------
def parse_expr(expr, knobs):
    db = {k: (a, d) for k, a, d in knobs}
    terms = []
    for tok in expr.split(" "):
        if not tok:
            continue
        name, _, vals = tok.partition("=")
        if name not in db:
            raise ValueError(f"Unknown knob: {name}")
        if vals.startswith("["):
            terms.append((name, [v.strip(" \t") for v in vals[1:-1].split("|")], False))
        else:
            terms.append((name, [vals], True))
    return terms, {n: d for n, (_, d) in db.items()}


def fast_routes(terms, defaults):
    base = [vals[0] if fixed else defaults.get(name, vals[0]) for name, vals, fixed in terms]
    routes = [(list(base), None)]
    for i in range(len(terms) - 1, -1, -1):  # knobs right-to-left, values in listed order
        name, vals, fixed = terms[i]
        if not fixed:
            routes += [(base[:i] + [v] + base[i + 1 :], (i, v)) for v in vals if v != base[i]]
    return [(" ".join(f"{t[0]}={v}" for t, v in zip(terms, r, strict=True)), varied) for r, varied in routes]


def full_routes(terms):
    import itertools

    return [(" ".join(f"{t[0]}={v}" for t, v in zip(terms, combo, strict=True)), None)
            for combo in itertools.product(*(vals for _, vals, _ in terms))]


def abs_argv(argv):
    out = []
    for a in argv:
        k, eq, v = a.partition("=")
        if eq and k in ("--onnx", "--saveEngine", "--tuneBuildRouteFile", "--loadEngine") and os.path.exists(v):
            a = f"{k}={os.path.realpath(v)}"
        out.append(a)
    return out


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def run_children(argv, f, routes, label, cache, skip, state):
    positives, baseline = [], None
    log(f"Tuning {label}: {len(routes)} iterations.")
    for i, (route, varied) in enumerate(routes):
        if i < skip:
            continue
        save = f.get("--saveEngine", [""])[-1]
        engine = f"{save}.iter{i}" if "--saveAllEngines" in f else f"/tmp/trtexec_tuning_{os.getpid()}_iter{label}_{i}.plan"
        res_path = f"/tmp/trtexec_tuning_{os.getpid()}_iter{i}.json"
        print(f"&&&& TASK_BEGIN [iter={i}] BuildRoute = '{route}'", flush=True)
        child_argv = [a for a in argv if not a.startswith(STRIP)]
        child_argv += [f"--setBuildRoute={route}", f"--saveEngine={engine}", f"--tuningResultFile={res_path}"]
        log(f"Tuning iteration [{i}]: {route}")
        if os.path.exists(res_path):
            os.remove(res_path)
        rc = subprocess.call([sys.executable, os.path.abspath(__file__), *child_argv])
        crashed, error, gpu, losses = False, "", 0.0, {}
        try:
            with open(res_path) as fh:
                text = fh.read()
            try:
                data = json.loads(text)
                gpu, losses = data.get("gpu_time_ms", 0.0), data.get("accuracy_loss") or {}
            except ValueError as exc:
                crashed, error = True, f"failed to parse tuning result JSON: {exc}"
        except OSError:
            crashed, error = True, f"missing tuning result file {res_path} (child likely crashed before writing)"
        if rc < 0:
            crashed, error = True, f"child killed by signal {-rc} ({signal.strsignal(-rc)})"
        elif rc != 0 and not crashed:
            error = f"child exited with status {rc}"
        if not crashed and rc == 0:
            state["ok"] += 1
            if gpu < state["best"][1]:
                state["best"] = (route, gpu, engine)
            if i == 0:
                baseline = gpu
            print(f"&&&& TASK_END [iter={i}] BuildRoute = '{route}'", flush=True)
        else:
            log(f"Iteration [{i}] failed: {error or '(no message)'}", "W")
            print(f"&&&& TASK_ABORT [iter={i}] BuildRoute = '{route}'", flush=True)
        if varied is not None and baseline is not None and not crashed and 0 < gpu < baseline:
            positives.append(varied)  # trtexec does not look at accuracy here
        row = {"iter": i, "build_route": route, "crash": crashed, "error_message": error,
               "accuracy_loss": None if crashed or not losses else losses, "gpu_time": None if crashed else gpu}
        with open(cache, "a") as fh:
            fh.write(dumps(row) + "\n")
        if os.path.exists(res_path):
            os.remove(res_path)
        time.sleep(float(os.environ.get("FAKE_TRTEXEC_ROW_DELAY", "0.05")))
    return positives


def tune(argv):
    f = flags(argv)
    skip = 0
    if "--continue" in f:
        extra = [a for a in argv if a != "--continue" and not a.startswith("--tuningCacheFile=")]
        if extra:
            log(f"--continue requires exactly --tuningCacheFile=<path>; no other options are allowed (got '{extra[0]}'). "
                "All options come from the cache header.", "E")
            return 1
        cache = f["--tuningCacheFile"][-1]
        with open(cache) as fh:
            lines = fh.read().split("\n")
        header = json.loads(lines[0])
        skip = sum(1 for line in lines[1:] if line)
        argv = [a for a in header["argv"][1:] if not a.startswith(("--tuneBuildRoutes=", "--tuneBuildRouteFile=", "--tuningCacheFile="))
                and a != "--continue"]
        argv += [f"--tuneBuildRoutes={header['tuning_expr']}", f"--tuningCacheFile={cache}"]
        log(f"--continue: resuming from iteration {skip} using {len(argv) + 1} args reconstructed from cache header.")
        f = flags(argv)
    unknown = sorted(k for k in f if k.startswith("--") and k not in KNOWN_FLAGS)
    if unknown:
        log(f"Unknown option: {unknown[0]}", "E")
        return 1
    text, version, knobs = database()
    expr = f["--tuneBuildRoutes"][-1]
    try:
        terms, defaults = parse_expr(expr, knobs)
    except ValueError as exc:
        log(f"Failed to parse --tuneBuildRoutes expression: {exc}", "E")
        return 1
    search = f.get("--tuningSearch", ["fast"])[-1]
    routes = full_routes(terms) if search == "full" else fast_routes(terms, defaults)
    log(f"Expanded to {len(routes)} build route configurations")
    cache = f.get("--tuningCacheFile", ["best_config.json"])[-1]
    if skip == 0:
        algo = f.get("--accuracyAlgorithm", ["l0"])[-1]
        header = {
            "tuner_version": version, "accuracy_algorithm": DISPLAY[algo],
            "accuracy_parameter": {"atol": f32(f.get("--atol", ["1e-5"])[-1]), "rtol": f32(f.get("--rtol", ["1e-5"])[-1]),
                                   "epsilon": f32(f.get("--accuracyThreshold", ["0"])[-1])},
            "searching_algorithm": search,
            "command_line": shlex.join(["trtexec", *argv]),
            "default_build_route": " ".join(f"{k}={d}" for k, _, d in knobs),
            "tuning_expr": expr,
            "files": {k: os.path.realpath(f[flag][-1]) for k, flag in (("onnx", "--onnx"), ("save_engine", "--saveEngine")) if flag in f},
            "argv": abs_argv(["trtexec", *argv]),
        }
        with open(cache, "w") as fh:
            fh.write(dumps(header) + "\n")
    state = {"ok": 0, "best": (None, float("inf"), None)}
    positives = run_children(argv, f, routes, "phase1", cache, skip, state)
    if search == "mixed":
        if len(positives) > 1:
            log(f"Mixed search: {len(positives)} positive knobs identified; entering phase 2.")
            keep = {i for i, _ in positives}
            base = [r for r in fast_routes(terms, defaults)][0][0].split(" ")
            sub = [(n, vals, False) if i in keep else (n, [base[i].split("=", 1)[1]], True) for i, (n, vals, _) in enumerate(terms)]
            run_children(argv, f, full_routes(sub), "phase2", cache, 0, state)
        else:
            log(f"Mixed search: {len(positives)} positive knob(s); skipping phase 2 (need >1).")
    route, best, engine = state["best"]
    if route is None:
        log("No tuning iteration succeeded; no engine written.", "E")
        return 1
    save = f.get("--saveEngine", [""])[-1]
    if save and engine != save:
        shutil.copyfile(engine, save)
    log(f"Best iteration: {route} (gpu_time_ms={best:g})")
    log(f"Tuning summary: {state['ok']} / {len(routes)} iterations succeeded.")
    return 0


def main(argv):
    print("&&&& RUNNING TensorRT.trtexec [TensorRT v110100] [b106] # trtexec " + " ".join(argv), flush=True)
    f = flags(argv)
    if "--help" in f:
        print("=== Tuning Options ===")
        if os.environ.get("FAKE_TRTEXEC_NO_TUNE") != "1":
            print("  --tuneBuildRoutes=<expr>   Tune build routes")
        print("  --setBuildRoute=<route>    Build with one route")
        return 0
    if "--helpBuildRoute" in f:
        sys.stdout.write(database()[0] + "\n")  # trtexec.cpp: std::cout << allBuildRoutes
        return 0
    if "--tuneBuildRoutes" in f or "--continue" in f:
        return tune(argv)
    unknown = sorted(k for k in f if k.startswith("--") and k not in KNOWN_FLAGS)
    if unknown:
        log(f"Unknown option: {unknown[0]}", "E")
        return 1
    if "--setBuildRoute" in f:
        return child(f)
    if "--loadEngine" in f:
        return run_engine(f)
    log("Unknown invocation", "E")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
