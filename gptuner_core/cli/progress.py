"""The progress line of ``gptuner tune`` and ``retune``: a bar on a TTY, a line per candidate in logs."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from gptuner_core.records.study import Progress


def _fmt_eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class ProgressPrinter:
    """A one-line progress bar on a TTY; one line per candidate otherwise (CI logs)."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_done = -1

    def __call__(self, p: Progress) -> None:
        if p.phase == "waiting":  # a state of its own: who holds the device, since when
            self.stream.write(("\r" + p.current.ljust(110)[:110]) if self.tty else f"{p.current}\n")
            self.stream.flush()
            return
        total = p.total if p.total is not None else "?"
        # while screening: the screening's fastest, labelled; once done: the verdict's speed-up
        label = "verdict" if p.phase == "done" else "screening best"
        best = f"{label} {p.best_speedup:.3f}x" if p.best_speedup else f"{label} -"
        if isinstance(p.total, int) and p.total > 0:
            filled = int(20 * min(p.done / p.total, 1.0))
            bar = "[" + "#" * filled + "." * (20 - filled) + "] "
        else:
            bar = ""
        line = f"{bar}{p.done}/{total} routes  {best}  ETA {_fmt_eta(p.eta_s)}"
        if p.phase not in ("", "idle"):
            line += f"  {p.phase}: {p.current[:60]}"
        if self.tty:
            self.stream.write("\r" + line.ljust(110)[:110])
            self.stream.flush()
        elif p.last is not None and p.done != self._last_done:
            self._last_done = p.done
            last = p.last
            lat = f"{last.latency.median_ms:.3f} ms" if last.latency else "-"
            self.stream.write(
                f"[{last.number}] {last.state.value:<15} {lat:>12}  {last.requested_route or '(default)'}"
                f"   ({p.done}/{total}, {best}, ETA {_fmt_eta(p.eta_s)})\n"
            )
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
