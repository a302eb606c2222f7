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
        "the routes as '[i]:<route>' in trtexec's order. Every strategy of 'gptuner tune' is\n"
        "accepted: 'mixed' lists its phase 1 (trtexec refuses --dryRun with mixed) and says how\n"
        "many builds phase 2 may add; one that picks routes from measurements (fast_tpe, the\n"
        "default of tune, tpe, gp, bo, random, ...) is previewed by the builds it will spend."
    )
    value_options = ("--knob-db", "--backend", "--model", "--expr", "--expr-file")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_knob_db_arguments(parser)
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--expr", metavar="EXPR", help="expression, e.g. '-k=[a|b] -j=1'")
        source.add_argument(
            "--expr-file", metavar="FILE", help="expression file (lines joined with spaces)"
        )
        from gptuner_core.strategies import strategy_names

        parser.add_argument("--search", choices=strategy_names(), default="fast",
                            help="any strategy of 'gptuner tune' (default: fast, trtexec's order)")
        parser.add_argument("--max-candidates", type=int, metavar="N",
                            help="the candidate budget tune would get (caps the builds)")
        parser.add_argument("--seed", type=int, default=0)
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
        if args.search not in ("fast", "full", "mixed"):
            return _strategy_preview(expr, db, args)
        order = "fast" if args.search == "mixed" else args.search  # mixed's phase 1 is fast's order
        total = expr.count(order)
        print(f"Expanded to {total} build route configurations")
        if args.search == "mixed":
            _mixed_preview(expr, args)
        else:
            print(f"--dryRun: {total} build routes would be tried:")
        shown = 0
        for line in dry_run_lines(expr, order, args.limit):
            print(line)
            shown += 1
        if shown < total:
            print(f"... {total - shown} more (--limit {args.limit})")
        return 0


def _strategy_preview(expr, db, args: argparse.Namespace) -> int:  # noqa: ANN001
    """A strategy that picks routes from measurements: the space and the builds it will spend."""
    from gptuner_core.errors import GptunerError
    from gptuner_core.strategies import get_strategy

    if args.max_candidates is not None and args.max_candidates < 1:
        msg = f"--max-candidates must be at least 1 (got {args.max_candidates})"
        raise UsageError(msg)
    space = expr.count("full")
    try:
        strategy = get_strategy(args.search, expr, seed=args.seed, db=db,
                                budgeted=args.max_candidates is not None)
    except GptunerError as exc:
        raise UsageError(f"--search {args.search}: {exc}") from None
    planned = strategy.planned()
    cap = args.max_candidates
    builds = min(planned or cap, cap) if cap is not None else planned
    print(f"Expanded to {space} build route configurations")
    if builds is None:
        print(f"--search {args.search}: no fixed number of builds: it chooses routes as it goes "
              "and runs until --max-candidates, --time-budget or its own "
              "stopping rule")
    else:
        why = " (--max-candidates)" if cap is not None and builds == cap else ""
        print(f"--search {args.search}: {builds} builds{why}, the default route included (the "
              f"expression has {space} routes); it chooses routes as it goes, so they cannot be "
              "listed in advance")
    return 0


def _mixed_preview(expr, args: argparse.Namespace) -> None:  # noqa: ANN001
    """``mixed``: phase 1 is listed (fast's order); phase 2 is a product of the knobs phase 1
    found to matter, so only its most is known in advance (trtexec refuses --dryRun here)."""
    from gptuner_core.views.builder import strategy_counts

    (count,) = strategy_counts(expr, max_candidates=args.max_candidates, names=["mixed"])
    more = (count.high or 0) - (count.low or 0)
    print(f"--search mixed: {count.low}-{count.high} builds: phase 1's {count.low} routes below, then "
          f"up to {more} more in phase 2, chosen from phase 1's measurements (they cannot be "
          "listed in advance; trtexec refuses --dryRun with mixed)")
    print(f"--dryRun: {count.low} build routes would be tried in phase 1:")
