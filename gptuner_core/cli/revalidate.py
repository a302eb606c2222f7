"""``gptuner revalidate STUDY A B``: is B faster than A? (interleaved rounds, stored)."""

from __future__ import annotations

import argparse

from gptuner_core.cli._base import Command


class RevalidateCommand(Command):
    name = "revalidate"
    help = "measure two candidates of a study against each other in interleaved fresh processes"
    description = (
        "Run sequential interleaved rounds for exactly candidates A (the reference) and B until\n"
        "B is decided faster, not faster, or the round budget is spent (inconclusive); the\n"
        "result is stored with the study (Compare shows it).\n\n"
        "example:\n  gptuner revalidate runs/cnn 3 7"
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("a", type=int, metavar="A", help="the reference candidate")
        parser.add_argument("b", type=int, metavar="B", help="the candidate compared with A")
        parser.add_argument("--max-rounds", type=int, metavar="N",
                            help="round budget (default: the study's --revalidate-rounds)")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.cli._base import UsageError
        from gptuner_core.engine.pairwise import compare_candidates

        if args.max_rounds is not None and args.max_rounds < 2:
            msg = f"--max-rounds must be an integer >= 2 (got {args.max_rounds})"
            raise UsageError(msg)
        result = compare_candidates(args.study, args.a, args.b, max_rounds=args.max_rounds)
        est = result.contender(args.b).estimate
        ci = f" [{est.ci[0]:.3f}, {est.ci[1]:.3f}]" if est is not None and est.ci else ""
        point = f"{est.point:.3f}x" if est is not None else "-"
        print(f"#{args.b} vs #{args.a}: {result.verdict.value}: {point}{ci} after {result.rounds} rounds")
        print(result.message)
        return 0 if result.verdict.value != "inconclusive" else 3
