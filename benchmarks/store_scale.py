"""Study-store scale benchmark: put / list / fetch 10,000 synthetic candidates.

Usage::

    .venv/bin/python benchmarks/store_scale.py [--n 10000] [--samples 200] [--synchronous NORMAL]

Reports, for a fresh study in a temporary folder:

* ``put``: time per ``put_candidate`` (one committed transaction each, as the tuner does);
* ``candidates()``: listing every record without samples (what the results page loads),
  from the writer and from a read-only reader (target: well under the dashboard's 1.5 s for the
  whole results page at 10k candidates);
* ``candidates(with_samples=True)`` and ``candidate(n)`` (one record with samples);
* the store's size on disk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from gptuner_core.storage import open_store
from gptuner_core.testing.store_contract import make_record


def _size(study: Path) -> int:
    return sum(p.stat().st_size for p in study.iterdir() if p.name.startswith("study.sqlite"))


def _best_of(fn, repeat: int) -> tuple[float, float]:
    """Best wall time and best CPU time of ``repeat`` calls (CPU time is robust to a busy host)."""
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus)


def _fmt(t: tuple[float, float]) -> str:
    return f"{t[0] * 1e3:8.3f} ms wall {t[1] * 1e3:8.3f} ms cpu"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="candidates (default 10000)")
    parser.add_argument("--samples", type=int, default=200, help="raw samples per candidate")
    parser.add_argument("--synchronous", default="NORMAL", choices=["NORMAL", "FULL"])
    args = parser.parse_args()

    records = [make_record(n, n_samples=args.samples) for n in range(args.n)]
    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / "study"
        with open_store(study, synchronous=args.synchronous) as store:
            store.init_study({"model": "bench.onnx"}, {"device": "bench"})
            put_times = []
            t0 = time.perf_counter()
            for record in records:
                t = time.perf_counter()
                store.put_candidate(record)
                put_times.append(time.perf_counter() - t)
            put_total = time.perf_counter() - t0

            list_writer = _best_of(store.candidates, 3)
            with open_store(study, readonly=True) as reader:
                list_reader = _best_of(reader.candidates, 3)
                cold_open = _best_of(lambda: open_store(study, readonly=True).close(), 3)
                with_samples = _best_of(lambda: reader.candidates(with_samples=True), 2)
                one = _best_of(lambda: reader.candidate(args.n // 2), 20)
                assert len(reader.candidates()) == args.n
                assert reader.candidate(args.n - 1) == records[-1]
            size = _size(study)

    put_times.sort()
    print(f"store_scale: n={args.n} samples/candidate={args.samples} "
          f"synchronous={args.synchronous} cpu_count={os.cpu_count()} "
          f"loadavg={os.getloadavg()[0]:.2f}")
    print(f"  put_candidate        total {put_total:7.2f} s   "
          f"mean {statistics.mean(put_times) * 1e3:6.3f} ms   "
          f"p50 {put_times[len(put_times) // 2] * 1e3:6.3f} ms   "
          f"p99 {put_times[int(len(put_times) * 0.99)] * 1e3:6.3f} ms")
    print(f"  candidates()         writer {_fmt(list_writer)}   (best of 3)")
    print(f"  candidates()         reader {_fmt(list_reader)}   (best of 3)")
    print(f"  candidates(samples)  reader {_fmt(with_samples)}   (best of 2)")
    print(f"  candidate(n)         reader {_fmt(one)}")
    print(f"  open read-only              {_fmt(cold_open)}")
    print(f"  size on disk         {size / 1e6:7.1f} MB")


if __name__ == "__main__":
    main()
