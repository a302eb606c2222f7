"""Decision quality of ``gptuner gate`` over repeated runs on this machine.

A baseline bundle is made from a one-route study of the bundled ``assets/mlp_digits.onnx``
(ONNX Runtime, one intra-op thread, batch 16). Then, ``--runs`` times each (a different seed for
the round order every time):

* the unchanged model is gated against it: a ``regression`` is a **false regression**
  (target: at most 1 in 20);
* a copy with a no-op branch (a MatMul chain on the input multiplied by 0 and added, from
  ``tests/pipeline_tests/models.py``) whose width is calibrated here to make the model about
  ``--slowdown`` slower (default 10 %; the calibrated ratio, measured in-process with interleaved
  rounds, is printed): a ``regression`` is a **catch** (target: at least 19 in 20).

Every gate run builds the candidate in a fresh process and measures interleaved rounds of fresh
processes, exactly as ``gptuner gate`` does (it is called through the CLI's ``main``).

    .venv/bin/python benchmarks/gate_quality.py                    # 20 + 20 gate runs
    .venv/bin/python benchmarks/gate_quality.py --runs 3 --quick   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "pipeline_tests"))

from models import SAMPLE  # noqa: E402
from models import slowed  # noqa: E402
from models import subset  # noqa: E402


ROUTE = "-ort:intra_op_num_threads=1"


def _median_ms(path: Path, feed: dict, seconds: float) -> float:
    import numpy as np
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    for _ in range(20):
        sess.run(None, feed)
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def _ratio(path: Path, feed: dict, rounds: int) -> float:
    """Median over interleaved rounds (alternating which model runs first) of slowed / sample."""
    import numpy as np

    ratios = []
    for i in range(rounds):
        pair = [(path, 0), (SAMPLE, 1)] if i % 2 == 0 else [(SAMPLE, 1), (path, 0)]
        ms = {k: _median_ms(p, feed, 0.3) for p, k in pair}
        ratios.append(ms[0] / ms[1])
    return float(np.median(ratios))


def calibrate(tmp: Path, target: float, feed: dict, rounds: int = 7) -> tuple[Path, int, float]:
    """The branch width interpolated to slow the model by ``target``, then re-measured.

    Picking the measured width whose noisy ratio is closest to the target selects for a lucky
    estimate (the old calibration said 1.098x for a model the gates then measured at 1.065x);
    interpolating between the bracketing widths and measuring the result afresh does not.
    """
    seen: list[tuple[int, float]] = []
    for width in (64, 128, 192, 256, 320, 384, 512, 768, 1024):
        ratio = _ratio(slowed(tmp / f"slow{width}.onnx", width=width), feed, rounds)
        print(f"  branch width {width:4d}: {ratio:.3f}x", file=sys.stderr)
        seen.append((width, ratio))
        if ratio > target * 1.03:
            break
    below = [s for s in seen if s[1] <= target]
    above = [s for s in seen if s[1] > target]
    if not above:
        width = seen[-1][0]
    elif not below:
        width = above[0][0]
    else:
        (w0, r0), (w1, r1) = max(below), min(above)
        width = int(round((w0 + (target - r0) * (w1 - w0) / (r1 - r0)) / 4) * 4)
    path = slowed(tmp / f"slow{width}-chosen.onnx", width=width)
    ratio = _ratio(path, feed, 2 * rounds)
    print(f"  chosen width {width}: re-measured {ratio:.3f}x", file=sys.stderr)
    return path, width, ratio


def gate(bundle: Path, model: Path, seed: int, args: argparse.Namespace, out: Path) -> dict:
    from gptuner_core.cli import main

    argv = ["gate", str(bundle), "--model", str(model), "--threshold", str(args.threshold),
            "--max-rounds", str(args.max_rounds), "--seed", str(seed), "--json", str(out)]
    for opt in args.measure:
        argv += ["--measure-option", opt]
    t0 = time.monotonic()
    rc = main(argv)
    res = json.loads(out.read_text())
    return {"rc": rc, "decision": res["decision"], "ratio": res["ratio"], "ci": res["ci"],
            "rounds": res["rounds"], "seconds": time.monotonic() - t0}


def main() -> int:
    import numpy as np

    from gptuner_core.cli import main as cli

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--slowdown", type=float, default=1.10)
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--max-rounds", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="0.1 s per process, 8 rounds at most")
    ap.add_argument("--json", metavar="FILE", help="write every run's decision here")
    args = ap.parse_args()
    per_process = 0.1 if args.quick else 0.3
    if args.quick:
        args.max_rounds = min(args.max_rounds, 8)
    args.measure = [f"max_time_s={per_process}", "min_samples=20", "max_samples=2000", "warmup_s=0.02"]
    with tempfile.TemporaryDirectory(prefix="gate-quality-") as tmpdir:
        tmp = Path(tmpdir)
        data = subset(tmp / "digits64.npz", 64)
        measure = [a for opt in args.measure for a in ("--measure-option", opt)]
        rc = cli(["tune", str(SAMPLE), "--dataset", str(data), "--batch-size", "16", "--backend",
                  "onnxruntime", "--expr", ROUTE, "--epsilon", "1e-4", "--study", str(tmp / "study"), *measure,
                  "--profile-runs", "0", "--quiet"])
        assert rc == 0
        assert cli(["bundle", str(tmp / "study"), "-o", str(tmp / "bundle")]) == 0
        with np.load(data) as d:
            feed = {"input": d["input"][:16]}
        print(f"calibrating a {args.slowdown:.2f}x model:", file=sys.stderr)
        slow, width, ratio = calibrate(tmp, args.slowdown, feed)
        runs: dict[str, list[dict]] = {"unchanged": [], "slower": []}
        t0 = time.monotonic()
        for i in range(args.runs):
            for name, model in (("unchanged", SAMPLE), ("slower", slow)):
                r = gate(tmp / "bundle", model, i, args, tmp / f"{name}{i}.json")
                runs[name].append(r)
                print(f"  run {i + 1:2d} {name:9s}: {r['decision']:12s} {r['ratio']:.3f}x "
                      f"CI {r['ci']} in {r['rounds']} rounds, {r['seconds']:.1f} s", file=sys.stderr)
    n = args.runs
    unchanged = Counter(r["decision"] for r in runs["unchanged"])
    slower = Counter(r["decision"] for r in runs["slower"])
    print(f"gate decision quality, {n} runs each, threshold {args.threshold:.0%}, "
          f"<= {args.max_rounds} rounds of {per_process} s per process ({time.monotonic() - t0:.0f} s):")
    print(f"  unchanged model:          false regressions {unchanged['regression']}/{n} "
          f"(target <= {max(1, n // 20)}/{n}); decisions {dict(unchanged)}")
    print(f"  slower model (branch {width}, measured {ratio:.3f}x): caught {slower['regression']}/{n} "
          f"(target >= {n - max(1, n // 20)}/{n}); decisions {dict(slower)}")
    for name, rs in runs.items():
        print(f"  {name}: median rounds {np.median([r['rounds'] for r in rs]):.0f}, "
              f"median {np.median([r['seconds'] for r in rs]):.1f} s per gate")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "calibrated": {"width": width, "ratio": ratio},
                                               "runs": runs}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
