"""``engine.files.artifacts.tree_bytes`` against the pathlib walk it replaced, and a commit's
disk accounting (``StoreSink._keep_artifacts`` with nothing to prune: before session 54 the
folder's total, then ``disk_use`` walking each candidate twice and the root again; now one
``disk_use``), side by side on one synthetic study folder: 6 candidates of 300 Inductor-cache-like folders of 10 small files
(about 20 000 entries; a torch study on the H100 has thousands per candidate). The tuner walks
the study folder at every candidate's commit (``StoreSink._keep_artifacts``), on the thread that
hints the round line. Session 54 on this 2-core machine: a walk 0.27-0.53 s with pathlib, 0.11-0.16 s
with scandir; a commit's accounting 1.19-1.48 s before, 0.11-0.19 s now (three repeats each).

    .venv/bin/python benchmarks/tree_bytes.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def pathlib_walk(path: Path) -> int:
    """The walk before session 54: ``rglob`` and ``lstat`` through pathlib."""
    seen: set[tuple[int, int]] = set()
    total = 0
    paths = [path] if not path.is_dir() or path.is_symlink() else [path, *path.rglob("*")]
    for p in paths:
        try:
            st = p.lstat()
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:
            continue
        seen.add((st.st_dev, st.st_ino))
        total += st.st_blocks * 512
    return total


def commit_before(root: Path) -> int:
    """A commit's accounting before session 54: the total, then disk_use's walks by part."""
    from gptuner_core.engine.files.artifacts import build_outputs

    pathlib_walk(root)
    for folder in sorted((root / "candidates").iterdir()):
        for part in [*build_outputs(folder), folder]:
            pathlib_walk(part)
    return pathlib_walk(root)  # the total it stored


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from gptuner_core.engine.files.artifacts import disk_use
    from gptuner_core.engine.files.artifacts import tree_bytes

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for c in range(6):
            for k in range(300):
                d = root / "candidates" / f"{c:05d}" / "artifact" / "inductor" / f"{k:02x}"
                d.mkdir(parents=True)
                for f in range(10):
                    (d / f"kernel{f}.py").write_bytes(b"x" * 300)
        os.link(root / "candidates/00000/artifact/inductor/00/kernel0.py", root / "hard")
        print(f"entries: {sum(1 for _ in root.rglob('*'))}")
        for _ in range(args.repeats):
            for name, walk in (("pathlib", pathlib_walk), ("scandir", tree_bytes),
                               ("a commit before", commit_before), ("a commit now", lambda r: disk_use(r).total)):
                t0 = time.perf_counter()
                total = walk(root)
                print(f"{name}: {total} bytes in {time.perf_counter() - t0:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
