"""``gptuner revalidate STUDY A B``: is B faster than A? (interleaved rounds, stored)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import at_least
from gptuner_core.cli._base import candidate_number


if TYPE_CHECKING:
    from gptuner_core.records.pairwise import PairwiseProgress


class RevalidateCommand(Command):
    name = "revalidate"
    help = "measure two candidates of a study against each other in interleaved fresh processes"
    description = (
        "Run sequential interleaved rounds for exactly candidates A (the reference) and B until\n"
        "B is decided faster, not faster, or the round budget is spent (inconclusive); the\n"
        "result is stored with the study (Compare shows it). The study's measuring device is\n"
        "held meanwhile: while another study measures there, this waits for it.\n\n"
        "exit status: 0 decided, 3 inconclusive or B failed to measure, 2 bad input\n\n"
        "example:\n  gptuner revalidate runs/cnn 3 7"
    )

    runs_study_code = True

    def code_study(self, args: argparse.Namespace) -> str | None:
        return args.study

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("a", type=candidate_number, metavar="A", help="the reference candidate")
        parser.add_argument("b", type=candidate_number, metavar="B", help="the candidate compared with A")
        parser.add_argument("--max-rounds", type=at_least(2), metavar="N",
                            help="round budget (default: the study's --revalidate-rounds)")
        parser.add_argument("--run-dir", metavar="DIR",
                            help="the run's folder (measurements, state.json with its progress); "
                                 "default STUDY/pairwise/AAAAA_BBBBB-<stamp>")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.cli._base import UsageError
        from gptuner_core.engine.decide.pairwise import compare_candidates

        if args.max_rounds is not None and args.max_rounds < 2:
            msg = f"--max-rounds must be an integer >= 2 (got {args.max_rounds})"
            raise UsageError(msg)
        def said(progress: PairwiseProgress) -> None:
            if progress.phase == "waiting":  # another study measures on the device
                print(progress.message, file=sys.stderr, flush=True)

        folder = Path(args.run_dir) if args.run_dir else None
        comparison = compare_candidates(args.study, args.a, args.b, max_rounds=args.max_rounds,
                                        folder=folder, on_progress=said)
        print(comparison.headline())
        print(comparison.sentence())
        return 0 if comparison.verdict in ("winner", "not_faster") else 3
