"""How good is the ETA a quarter of the way into a study? (issue 25, item 5)

Runs ``gptuner tune`` on a bundled sample (a fresh study, re-validation on), reads its per-candidate
progress lines (``(d/t, ..., ETA 1m04s)``) as they come, and compares the first ETA printed after a
quarter of the study's wall time with the time the study really took from then on.

    .venv/bin/python benchmarks/eta_accuracy.py --sample mlp --out /tmp/eta_mlp
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
EXPR = ("-quant:mode=[off|qdq|dynamic] -ort:graph_optimization_level=[all|basic] "
        "-ort:intra_op_num_threads=[0|1]")


def _eta(line: str) -> float | None:
    m = re.search(r"ETA (?:(\d+)m)?(\d+)s\)", line)
    return None if m is None else int(m.group(1) or 0) * 60 + int(m.group(2))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sample", choices=("mlp", "cnn"), default="mlp")
    p.add_argument("--out", type=Path, required=True, help="study folder (must not exist)")
    p.add_argument("--max-s", type=float, default=1.0, help="measurement cap per candidate, s")
    args = p.parse_args(argv)
    cmd = [sys.executable, "-m", "gptuner_core", "tune", f"assets/{args.sample}_digits.onnx",
           "--backend", "onnxruntime", "--dataset", f"assets/{args.sample}_digits_eval.npz",
           "--search", "full", "--expr", EXPR, "--task-metric", "top1", "--max-task-drop", "0.01",
           "--metric", "cos", "--epsilon", "0.01", "--batch-size", "16", "--drift-every", "0",
           "--profile-runs", "0", "--measure-option", f"max_time_s={args.max_s}", "--study", str(args.out)]
    print("command:", shlex.join(["python", *sys.argv]))
    print("runs:", shlex.join(cmd[2:]))
    t0 = time.monotonic()
    lines: list[tuple[float, str]] = []
    proc = subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append((time.monotonic() - t0, line.rstrip()))
    proc.wait()
    total = time.monotonic() - t0
    timed = [(t, _eta(s)) for t, s in lines if _eta(s) is not None]
    at = next(((t, e) for t, e in timed if t >= total / 4), None)
    print(f"exit {proc.returncode}; wall time {total:.1f} s; {len(timed)} progress lines with an ETA")
    if at is None:
        print("no ETA after a quarter of the study")
        return 1
    t, eta = at
    actual = total - t
    print(f"at {t:.1f} s ({t / total:.0%} of the study): ETA {eta:.0f} s, actual remaining {actual:.1f} s, "
          f"error {(eta - actual) / actual:+.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
