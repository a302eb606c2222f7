"""What one thread of a process did, window by window, from py-spy's speedscope output.

``h200_issue38.sh spy`` samples the tuner's process of each study (``py-spy record --idle
--threads --format speedscope``, every thread 50 times a second, idle samples included): the
samples of a thread are in time order, each weighing its interval, so the sum of the weights
before a sample is its time since py-spy attached (a few hundredths of a second after the
process started). For each window this prints the share of the thread's samples per place: the
innermost frame of gptuner's own code (``--focus``), then the innermost frame of all.

    python benchmarks/spy_timeline.py spy_1.json --thread MainThread --window 0.5 --since 20 --until 40
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path


def _where(frames: list[dict], stack: list[int], focus: str) -> tuple[str, str]:
    def name(i: int) -> str:
        f = frames[i]
        return f"{f['name']} ({Path(str(f.get('file') or '')).name}:{f.get('line')})"

    own = [i for i in stack if focus in str(frames[i].get("file") or "")]
    return (name(own[-1]) if own else "-"), (name(stack[-1]) if stack else "idle")


def timeline(path: Path, thread: str, window: float, focus: str, since: float = 0.0,
             until: float = float("inf"), top: int = 2) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    frames = data["shared"]["frames"]
    lines = []
    for prof in data["profiles"]:
        if thread not in prof["name"]:
            continue
        lines.append(f"== {path.name}: {prof['name']}")
        buckets: dict[int, Counter] = {}
        t = 0.0
        for stack, weight in zip(prof["samples"], prof["weights"], strict=True):
            if since <= t < until:
                buckets.setdefault(int(t / window), Counter())[_where(frames, stack, focus)] += weight
            t += weight
        for b in sorted(buckets):
            total = sum(buckets[b].values())
            parts = [f"{share / total:4.0%} {own} <- {leaf}" for (own, leaf), share in buckets[b].most_common(top)]
            lines.append(f"{b * window:7.2f}  " + " | ".join(parts))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--thread", default="MainThread", help="part of the thread's name")
    parser.add_argument("--window", type=float, default=0.5, help="seconds per line")
    parser.add_argument("--focus", default="gptuner_core", help="a path part naming 'own' code")
    parser.add_argument("--since", type=float, default=0.0)
    parser.add_argument("--until", type=float, default=float("inf"))
    parser.add_argument("--top", type=int, default=2, help="places per window")
    args = parser.parse_args()
    for path in args.files:
        print("\n".join(timeline(path, args.thread, args.window, args.focus, args.since, args.until, args.top)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
