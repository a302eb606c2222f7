"""``gptuner report``: a study as one self-contained HTML file."""

from __future__ import annotations

import argparse

from gptuner_core.cli._base import Command


class ReportCommand(Command):
    name = "report"
    destinations = {"output": "study"}
    help = "write a study as one self-contained HTML report (figures embedded, no network)"
    description = (
        "Verdict, accuracy x latency, speed-ups with CIs, knob effects, measurement health, the\n"
        "candidate table and the repro commands in one HTML file that opens anywhere.\n\n"
        "example:\n  gptuner report runs/mlp -o report.html"
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="STUDY", help="study folder")
        parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.report import write_report

        out = write_report(args.study, args.output)
        print(f"report {out} ({out.stat().st_size / 1e6:.1f} MB, self-contained)")
        return 0
