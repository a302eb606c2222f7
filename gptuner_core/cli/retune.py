"""``gptuner retune``: after a change, check the old win and tune again, warm-started."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError
from gptuner_core.cli._base import at_least


class RetuneCommand(Command):
    name = "retune"
    destinations = {"study": "old"}
    help = "re-tune after a model/shape/device/software change: re-check the old win, then search warm-started"
    description = (
        "First re-validates the old study's winning route against the new default route on the\n"
        "new model (does the old win still hold?), then runs a new study warm-started from the\n"
        "old one under the time budget, and records the lineage (old study -> new study).\n\n"
        "example:\n  gptuner retune runs/mlp --model mlp_v2.onnx --study runs/mlp-v2 --time-budget 10m"
    )

    runs_study_code = True

    def code_study(self, args: argparse.Namespace) -> str | None:
        return args.old

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("old", metavar="OLD_STUDY", help="the study to re-tune")
        parser.add_argument("--model", required=True, help="the changed model")
        parser.add_argument("--study", required=True, metavar="DIR", help="the new study folder")
        parser.add_argument("--dataset", metavar="NPZ", help="inputs for the new model (default: the old study's)")
        parser.add_argument("--time-budget", metavar="DURATION", help="e.g. 10m")
        parser.add_argument("--max-candidates", type=at_least(1))
        parser.add_argument("--check-rounds", type=at_least(2), default=8,
                            help="round budget of the old-winner check (default 8)")
        parser.add_argument("--warm-start", action="append", metavar="STUDY_OR_RECORDING",
                            help="start from these too, besides OLD_STUDY: studies or recordings of "
                            "the same knobs (another GPU, an imported space; repeatable)")
        parser.add_argument("--measure-option", action="append", metavar="KEY=VALUE")
        parser.add_argument("--quiet", action="store_true")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.cli.progress import ProgressPrinter
        from gptuner_core.cli.tune import parse_duration
        from gptuner_core.cli.tune import parse_kv
        from gptuner_core.records import StudyStatus
        from gptuner_core.retune import retune

        if not Path(args.model).exists():
            msg = f"--model '{args.model}' does not exist (expected the changed model file)"
            raise UsageError(msg)
        if args.dataset and not Path(args.dataset).exists():
            msg = f"--dataset '{args.dataset}' does not exist (expected an .npz of named inputs)"
            raise UsageError(msg)
        if args.check_rounds < 2:
            msg = f"--check-rounds must be >= 2 (got {args.check_rounds})"
            raise UsageError(msg)
        printer = None if args.quiet else ProgressPrinter()
        res = retune(
            args.old, args.study, args.model, dataset=args.dataset,
            time_budget_s=parse_duration(args.time_budget) if args.time_budget else None,
            max_candidates=args.max_candidates, check_rounds=args.check_rounds,
            measurement=parse_kv(args.measure_option, "--measure-option"), progress=printer,
            on_check=lambda c: print(f"old winner: {c.message}", file=sys.stderr),
            warm_start=tuple(args.warm_start or ()),
        )
        if printer is not None:
            printer.close()
        changed = "; ".join(f"{k}: {a} -> {b}" for k, a, b in res.changes) or "nothing (re-tuned anyway)"
        print(f"changed since {res.old}: {changed}")
        print(f"old winner holds: {res.check.holds} ({res.check.message})")
        print(f"study {res.new}: {res.summary.status.value}; {res.summary.message}")
        return 0 if res.summary.status in (StudyStatus.FINISHED, StudyStatus.STOPPED) else 1
