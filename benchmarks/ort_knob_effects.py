"""Latency and top-1 of a few ONNX Runtime routes on the bundled samples (interleaved rounds).

Usage::

    .venv/bin/python benchmarks/ort_knob_effects.py                 # both samples, batch 1 and 32
    .venv/bin/python benchmarks/ort_knob_effects.py --rounds 7 --models cnn_digits

All routes are built and loaded first, then timed round-robin (A B C A B C ...) so slow drifts of a
shared machine hit every route alike; each cell is the median over rounds of the per-call time of
one ~0.1 s window. Speed-ups are against the default route of the same batch size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gptuner_core.backends.onnxruntime import OnnxRuntimeBackend  # noqa: E402
from gptuner_core.routes import Route  # noqa: E402


ROUTES = [
    "",
    "-ort:intra_op_num_threads=1",
    "-ort:graph_optimization_level=disable",
    "-ort:execution_mode=parallel -ort:inter_op_num_threads=2",
    "-quant:mode=qdq",
    "-quant:mode=qdq -quant:reduce_range=on",
    "-quant:mode=qdq -quant:per_channel=on",
    "-quant:mode=qoperator",
    "-quant:mode=dynamic -quant:op_types=gemm",
    "-quant:mode=dynamic",
    "-quant:mode=qdq -quant:weight_type=int4",
    "-fp16:convert=on",
]


def window_ms(runner, target_s: float = 0.1) -> float:  # noqa: ANN001
    n = 1
    while True:
        ns = runner.time_calls(n)
        if ns >= target_s * 1e9 or n >= 1 << 16:
            return ns / n / 1e6
        n = max(n * 2, int(n * target_s * 1e9 / max(ns, 1)))


def run_model(name: str, rounds: int, batches: list[int]) -> None:
    backend = OnnxRuntimeBackend()
    model = ROOT / "assets" / f"{name}.onnx"
    ev = np.load(ROOT / "assets" / f"{name}_eval.npz")
    calib = dict(np.load(ROOT / "assets" / f"{name}_calib.npz"))
    work = Path(tempfile.mkdtemp(prefix="ort-bench-"))
    runners, accs, builds = {}, {}, {}
    for i, text in enumerate(ROUTES):
        wd = work / "candidates" / f"{i:05d}"
        wd.mkdir(parents=True)
        res = backend.build(model, Route.parse(text), wd, calibration=calib)
        runner = backend.load(res)
        logits = np.concatenate(
            [runner.infer({"input": ev["input"][j : j + 250]})["logits"] for j in range(0, 1000, 250)]
        )
        accs[text] = float((logits.argmax(1) == ev["labels"]).mean())
        builds[text] = res.info["transform_s"] + res.info["session_s"]
        runners[text] = runner
    print(f"\n## {name} ({len(ev['labels'])} eval rows, {rounds} interleaved rounds)\n")
    header = "| route | top-1 | build s |" + "".join(f" b{b} ms | b{b} speed-up |" for b in batches)
    print(header)
    print("|---|---|---|" + "---|---|" * len(batches))
    cells: dict[tuple[str, int], float] = {}
    for b in batches:
        for r in runners.values():
            r.prepare({"input": ev["input"][:b]})
            window_ms(r, 0.02)
        samples: dict[str, list[float]] = {t: [] for t in runners}
        for _ in range(rounds):
            for text, r in runners.items():
                samples[text].append(window_ms(r))
        for text, vals in samples.items():
            cells[(text, b)] = statistics.median(vals)
    for text in runners:
        row = f"| `{text or '(default)'}` | {accs[text]:.3f} | {builds[text]:.2f} |"
        for b in batches:
            ms = cells[(text, b)]
            row += f" {ms:.3f} | {cells[('', b)] / ms:.2f}x |"
        print(row)
    for r in runners.values():
        r.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["cnn_digits", "mlp_digits"])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    args = p.parse_args(argv)
    for name in args.models:
        run_model(name, args.rounds, args.batches)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
