"""Build a few ``torch`` backend routes of the digits CNN sample and report what they do.

For each route: build (compile) time, the artifact hash (duplicate detection), latency per call
(median of ``--samples`` windows of ``time_calls``), top-1 on the evaluation set, and the l2 (mean
squared error, as ``gptuner_core.accuracy``) and lInf distance of the logits to the first route's. Used to check the backend on the H200 and to
choose accuracy epsilons from measured losses. It measures; it asserts nothing::

    .venv/bin/python benchmarks/torch_inductor_routes.py --device cpu --compile-threads 1
    python benchmarks/torch_inductor_routes.py --device cuda:0 \\
        --route= --route=-torch:mode=reduce-overhead --route=-torch:precision=fp16
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODEL = ROOT / "assets" / "torch_digits_cnn.py"
EVAL = ROOT / "assets" / "torch_digits_eval.npz"
DEFAULT_ROUTES = ("", "-torch:precision=bf16", "-torch:precision=fp16", "-inductor:freezing=on")


def tree_sha256(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto")
    parser.add_argument("--compile-threads", type=int, default=0)
    parser.add_argument("--route", action="append", help="route text (repeatable; '' = default)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--calls", type=int, default=50, help="calls per time_calls window")
    parser.add_argument("--samples", type=int, default=15, help="time_calls windows per route")
    parser.add_argument("--knobs", action="store_true", help="print the knob database first")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)

    from gptuner_core.backends.torch_inductor import TorchInductorBackend
    from gptuner_core.routes import Route

    backend = TorchInductorBackend(
        {"device": args.device, "compile_threads": args.compile_threads}
    )
    print(json.dumps(backend.environment()))
    db = backend.describe(MODEL)
    if args.knobs:
        print(db.to_string())
    with np.load(EVAL) as data:
        x, labels = data["x"], data["labels"]
    routes = args.route if args.route is not None else list(DEFAULT_ROUTES)
    rows = []
    reference = None
    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(routes):
            row: dict[str, object] = {"route": text or "(default)"}
            t0 = time.perf_counter()
            try:
                built = backend.build(MODEL, Route.parse(text), Path(tmp) / f"c{i:03d}")
            except Exception as exc:  # noqa: BLE001 - a measurement script reports, it goes on
                row["error"] = f"{type(exc).__name__}: {exc}"
                print(json.dumps(row), flush=True)
                rows.append(row)
                continue
            row["build_s"] = round(time.perf_counter() - t0, 2)
            row["compile_s"] = built.info["compile_time_s"]
            row["sha"] = tree_sha256(built.artifact)[:12]
            row["runtime_config"] = built.info.get("runtime_config", {})
            with backend.load(built) as runner:
                logits = np.concatenate(
                    [runner.infer({"x": x[s : s + args.batch]})["output"] for s in range(0, len(x), args.batch)]
                )
                runner.prepare({"x": x[: args.batch]})
                runner.time_calls(args.calls)
                per_call = [runner.time_calls(args.calls) / args.calls / 1e3 for _ in range(args.samples)]
                row["telemetry"] = runner.telemetry()
            row["us_per_call"] = round(statistics.median(per_call), 2)
            row["us_min"] = round(min(per_call), 2)
            row["top1"] = round(float((logits.argmax(1) == labels).mean()), 4)
            if reference is None:
                reference = logits
            diff = (logits.astype(np.float64) - reference.astype(np.float64)).ravel()
            row["l2"] = float(np.mean(diff**2))  # mean squared error, as gptuner_core.accuracy
            row["lInf"] = float(np.max(np.abs(diff)))
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
