"""``gptuner dry-run``: count and list the routes of an expression like ``trtexec --dryRun``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError
from gptuner_core.cli._base import add_knob_db_arguments
from gptuner_core.cli._base import load_knob_db


if TYPE_CHECKING:
    import argparse


def _non_negative(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        msg = f"expected a non-negative integer (got {text!r})"
        raise argparse.ArgumentTypeError(msg) from None
    if value < 0:
        msg = f"expected a non-negative integer (got {value})"
        raise argparse.ArgumentTypeError(msg)
    return value


class DryRunCommand(Command):
    name = "dry-run"
    help = "count and list the build routes of a tunable expression (trtexec --dryRun)"
    description = (
        "Parse a tunable expression with trtexec's grammar and print the route count, then\n"
        "the routes as '[i]:<route>' in trtexec's order. 'mixed' is refused, as by trtexec:\n"
        "its phase 2 depends on measurements."
    )
    value_options = ("--knob-db", "--backend", "--model", "--expr", "--expr-file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_knob_db_arguments(parser)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--expr", metavar="EXPR", help="expression, e.g. '-k=[a|b] -j=1'")
        source.add_argument(
            "--expr-file", metavar="FILE", help="expression file (lines joined with spaces)"
        )
        parser.add_argument("--search", choices=("fast", "full", "mixed"), default="fast")
        parser.add_argument(
            "--limit", type=_non_negative, metavar="N", help="print at most N routes"
        )

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.expressions import Expression
        from gptuner_core.expressions import dry_run_lines

        db = load_knob_db(args)
        if args.expr is not None:
            expr = Expression.parse(args.expr, db)
        else:
            expr = Expression.from_file(args.expr_file, db)
        total = expr.count(args.search)
        if args.search == "mixed":
            msg = (
                f"--dryRun cannot be used with --tuningSearch=mixed: phase 2 depends on "
                f"measurements (phase 1 has {total} build route configurations; "
                f"use --search fast to list them)"
            )
            raise UsageError(msg)
        print(f"Expanded to {total} build route configurations")
        print(f"--dryRun: {total} build routes would be tried:")
        shown = 0
        for line in dry_run_lines(expr, args.search, args.limit):
            print(line)
            shown += 1
        if shown < total:
            print(f"... {total - shown} more (--limit {args.limit})")
        return 0
