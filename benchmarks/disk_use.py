"""Disk use of a real-model study: all-MiniLM-L6-v2 (the real-model set's ``minilm``) on ONNX Runtime.

Usage::

    .venv/bin/python scripts/real_models.py --only minilm        # once: builds the model + sentences
    .venv/bin/python benchmarks/disk_use.py [--time-budget 10m] [--keep-artifacts top-k] [--inline]

Runs ``gptuner tune`` on MiniLM (int64 ids, real sentences, cos gate on ``sentence_embedding``)
over quantization, fp16 and session knobs for ``--time-budget``, sampling the study folder's size
every second, and reports: candidates (built, duplicates), the folder's final size by part
(``engine.files.artifacts.disk_use``), the peak sampled while it ran, the bytes pruned or never kept
(what ``--keep-artifacts all`` would have added), and the disk per built candidate.
Target (issue 16): a 10-minute MiniLM study uses at most 1 GB.

``--inline`` tunes a copy of the model with its weights inline (for an ONNX Runtime backend whose
optimized-model identity cannot read external data); ``--lock-dir`` keeps this run's device lock
apart from other studies on a shared machine (disk use does not depend on it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("GPTUNER_REAL_MODELS", "~/.cache/gptuner/real-models")).expanduser()
EXPR = (
    "-quant:mode=[off|dynamic|qdq|qoperator] -quant:op_types=[compute|gemm|all] "
    "-quant:per_channel=[off|on] -quant:reduce_range=[off|on] -fp16:convert=[off|on] "
    "-ort:graph_optimization_level=[all|basic|extended] -ort:intra_op_num_threads=[0|1|2] "
    "-ort:execution_mode=[sequential|parallel] -ort:config:session.intra_op.allow_spinning=[1|0]"
)


def minilm() -> dict:
    manifest = CACHE / "manifest.json"
    if not manifest.is_file():
        sys.exit(f"no real-model set in {CACHE}: run scripts/real_models.py --only minilm first")
    entry = next((m for m in json.loads(manifest.read_text())["models"] if m["name"] == "minilm"), None)
    if entry is None:
        sys.exit(f"{manifest} has no minilm entry: run scripts/real_models.py --only minilm")
    return entry


def inline_copy(model: str, folder: Path) -> str:
    import onnx

    out = folder / "minilm_inline.onnx"
    onnx.save_model(onnx.load(model), str(out))
    return str(out)


def sampler(study: Path, stop: threading.Event, peak: list[int]) -> None:
    from gptuner_core.engine.files.artifacts import tree_bytes

    while not stop.is_set():
        if study.exists():
            peak[0] = max(peak[0], tree_bytes(study))
        stop.wait(1.0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-budget", default="10m")
    parser.add_argument("--keep-artifacts", default="top-k", choices=["best", "top-k", "all"])
    parser.add_argument("--inline", action="store_true")
    parser.add_argument("--lock-dir", help="GPTUNER_LOCK_DIR for this run")
    parser.add_argument("--study", type=Path, help="study folder (default: a temporary one)")
    args = parser.parse_args()
    from gptuner_core.engine.files.artifacts import disk_use
    from gptuner_core.engine.files.artifacts import human_bytes
    from gptuner_core.records import CandidateState
    from gptuner_core.storage import open_store

    entry = minilm()
    work = Path(tempfile.mkdtemp(prefix="gptuner-disk-"))
    model = inline_copy(entry["model"], work) if args.inline else entry["model"]
    study = args.study or work / "study"
    dataset = Path(entry["dataset"])
    dataset = dataset if dataset.is_absolute() else CACHE / "data" / dataset
    cmd = [
        sys.executable, "-m", "gptuner_core", "tune", model, "--backend", "onnxruntime",
        "--dataset", str(dataset), "--expr", EXPR, "--metric", "cos",
        "--epsilon", "sentence_embedding=0.06", "--epsilon", "1e9",
        "--time-budget", args.time_budget, "--keep-artifacts", args.keep_artifacts,
        "--study", str(study), "--quiet",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if args.lock_dir:
        env["GPTUNER_LOCK_DIR"] = args.lock_dir
    print("$", " ".join(cmd), flush=True)
    stop, peak = threading.Event(), [0]
    thread = threading.Thread(target=sampler, args=(study, stop, peak), daemon=True)
    thread.start()
    t0 = time.monotonic()
    rc = subprocess.call(cmd, env=env, stdout=subprocess.DEVNULL)
    stop.set()
    thread.join()
    wall = time.monotonic() - t0
    with open_store(study, readonly=True) as store:
        recs = store.candidates()
        recorded = store.get_meta("disk_use") or {}
        winner = store.winner()
    use = disk_use(study)
    dupes = sum(r.state is CandidateState.DUPLICATE for r in recs)
    built = sum(bool(r.artifact_sha256) and r.state is not CandidateState.DUPLICATE for r in recs)
    freed = int(recorded.get("freed", 0))
    print(f"exit {rc} after {wall:.0f} s: {len(recs)} candidates ({built} built, {dupes} duplicates); "
          f"verdict: {winner.headline() if winner else '-'}")
    print(use.summary())
    print(f"peak (sampled each second): {human_bytes(peak[0])}; at candidate boundaries: "
          f"{human_bytes(recorded.get('peak', 0))}")
    print(f"pruned or never kept: {human_bytes(freed)} (--keep-artifacts all would hold about "
          f"{human_bytes(use.total + freed)})")
    if built:
        print(f"build outputs per built candidate: {human_bytes((use.build_outputs + freed) / built)}")
    print(json.dumps({"rc": rc, "wall_s": round(wall), "candidates": len(recs), "built": built,
                      "duplicates": dupes, "total": use.total, "peak_sampled": peak[0],
                      "freed": freed, "keep": args.keep_artifacts, "study": str(study)}))
    if args.study is not None:  # the model copy goes; the study stays where it was asked
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if use.total <= 1_000_000_000 else 1


if __name__ == "__main__":
    sys.exit(main())
