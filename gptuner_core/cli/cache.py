"""``gptuner cache show FILE``: summary and best eligible row of a trtexec tuning cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import print_table
from gptuner_core.cli._base import shorten


if TYPE_CHECKING:
    import argparse

    from gptuner_core.interop.trtexec_cache import CacheRow
    from gptuner_core.interop.trtexec_cache import TuningCache


def row_status(row: CacheRow, cache: TuningCache) -> str:
    from gptuner_core.interop.trtexec_cache import accuracy_failed

    if row.crash:
        return "crashed"
    if accuracy_failed(row, cache.header):
        return "accuracy failed"
    return "ok"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g} ms"


class CacheCommand(Command):
    name = "cache"
    help = "inspect a trtexec tuning cache (--tuningCacheFile JSONL)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="cache_action", metavar="ACTION", required=True)
        show = actions.add_parser("show", help="summary and best eligible row of a cache file")
        show.add_argument("file", metavar="FILE", help="tuning cache JSONL file")
        show.add_argument("--rows", action="store_true", help="also list every row")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.interop.trtexec_cache import read_tuning_cache

        cache = read_tuning_cache(args.file)
        h = cache.header
        eps = h.epsilon
        params = h.accuracy_parameter
        accuracy = (
            f"{h.accuracy_algorithm} (atol {params.get('atol')}, rtol {params.get('rtol')}, "
            f"epsilon {eps if eps is not None else 'unset: accuracy not checked'})"
        )
        phases = sorted({r.phase for r in cache.rows})
        per_phase = ", ".join(f"phase {p}: {len(cache.phase_rows(p))}" for p in phases)
        n_crashed = len(cache.crashed)
        n_acc = len(cache.accuracy_failures)
        fields = [
            ("file", args.file),
            ("tuner_version", h.tuner_version),
            ("search", h.searching_algorithm),
            ("accuracy", accuracy),
            ("tuning_expr", h.tuning_expr),
            ("rows", f"{len(cache.rows)}" + (f" ({per_phase})" if len(phases) > 1 else "")),
            ("crashed", n_crashed),
            ("accuracy failed", n_acc),
            ("eligible", len(cache.eligible_rows())),
        ]
        best = cache.best()
        if best is None:
            fields.append(("best", "none (no iteration succeeded)"))
        else:
            fields.append(
                ("best", f"iter {best.iter} (phase {best.phase}), gpu_time {_ms(best.gpu_time)}")
            )
            fields.append(("best route", best.build_route))
        for key, value in fields:
            print(f"{key + ':':<17}{value}")
        for warning in cache.warnings:
            print(f"warning: {warning}")
        if args.rows:
            print()
            rows = [
                (
                    r.phase,
                    r.iter,
                    row_status(r, cache),
                    _ms(r.gpu_time),
                    shorten(r.error_message, 40),
                    r.build_route,
                )
                for r in cache.rows
            ]
            print_table(("PHASE", "ITER", "STATUS", "GPU_TIME", "ERROR", "ROUTE"), rows)
        return 0
