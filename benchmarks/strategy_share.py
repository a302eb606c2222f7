"""How long a real tuning study waits on its strategy (issue 40 item 5: at most 5 % of its wall).

One real study (ONNX Runtime on the CPU, real processes, real SQLite) of ``assets/cnn_digits.onnx``
over ten session knobs (4,608 routes: ``auto`` runs ``hybrid`` there) with ``--search auto`` and a
candidate budget, one candidate at a time (``--build-workers 1``: every ``ask`` is waited for;
with building ahead the strategy is asked while builds run). Every ``ask`` and ``tell`` of the
strategy is timed in the tuner's own process (``strategies.get_strategy`` wrapped; nothing else
is patched). It prints the study's wall, the strategy's seconds (total and the slowest call) and
their share. The candidates here build and measure in well under a second each (a tiny model,
``max_time_s=0.3``): a GPU build takes seconds to minutes, so the share is an upper bound::

    PYTHONPATH=$PWD OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/strategy_share.py --candidates 80
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
for path in (ROOT, ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

EXPR = ("-ort:graph_optimization_level=[disable|basic|extended|all] -ort:execution_mode=[sequential|parallel] "
        "-ort:intra_op_num_threads=[0|1|2] -ort:inter_op_num_threads=[0|1|2] -ort:enable_mem_pattern=[on|off] "
        "-ort:enable_cpu_mem_arena=[on|off] -ort:enable_mem_reuse=[on|off] "
        "-ort:config:session.intra_op.allow_spinning=[1|0] -ort:config:session.disable_prepacking=[0|1] "
        "-ort:config:session.dynamic_block_base=[0|4]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--candidates", type=int, default=80)
    ap.add_argument("--search", default="auto")
    args = ap.parse_args()
    from replay_speed import Timed  # the same timing wrapper as the replay's

    import gptuner_core.strategies as strategies
    from gptuner_core.cli import main as gptuner

    real, made = strategies.get_strategy, []

    def timed_get(*a, **k):  # type: ignore[no-untyped-def]
        made.append(Timed(real(*a, **k)))
        return made[-1]

    strategies.get_strategy = timed_get
    os.environ.setdefault("GPTUNER_LOCK_DIR", tempfile.mkdtemp(prefix="gptuner-locks-"))
    with tempfile.TemporaryDirectory(prefix="strategy-share-") as tmp:
        t0 = time.perf_counter()
        try:
            rc = gptuner([
                "tune", str(ROOT / "assets/cnn_digits.onnx"), "--backend", "onnxruntime",
                "--dataset", str(ROOT / "assets/cnn_digits_eval.npz"), "--expr", EXPR,
                "--search", args.search, "--max-candidates", str(args.candidates), "--metric", "cos",
                "--epsilon", "0.01", "--batch-size", "8", "--revalidate-top-k", "0", "--build-workers", "1",
                "--measure-option", "max_time_s=0.3", "--study", str(Path(tmp) / "s"), "--quiet",
            ])
        finally:
            strategies.get_strategy = real
        wall = time.perf_counter() - t0
    calls = [c for s in made for c in s.calls]
    spent = sum(calls)
    print(f"exit {rc}; {args.search}, {args.candidates} candidates: study wall {wall:.1f} s, strategy "
          f"{spent:.2f} s in {len(calls)} asks and tells (slowest {1e3 * max(calls, default=0):.0f} ms): "
          f"{100 * spent / wall:.1f} % of the wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
