"""``gptuner explain STUDY [N]``: why the winner (or candidate N) differs from the default route."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError
from gptuner_core.cli._base import at_least
from gptuner_core.cli._base import candidate_number
from gptuner_core.cli._base import format_table
from gptuner_core.cli._base import shorten


if TYPE_CHECKING:
    from gptuner_core.explain import Explanation


def _ci(ci: tuple[float, float] | None, fmt: str = ".3f") -> str:
    return f"[{ci[0]:{fmt}}, {ci[1]:{fmt}}]" if ci else ""


def explanation_lines(e: Explanation, *, limit: int = 15) -> list[str]:
    """The explanation as text (the CLI's output; the page renders the same records)."""
    from gptuner_core.cli.diff import diff_lines

    rec, base = e.record, e.baseline_record
    lines = [f"candidate #{rec.number} ({rec.state.value}) vs the default route #{base.number}"]
    if rec.speedup is not None:  # after the verdict, labelled: never read as the study's answer
        from gptuner_core.records.verdict_text import screening_label

        lines.append(screening_label(rec.speedup, rec.speedup_ci))
    if not e.changed:
        lines.append("it sets every knob as the default route does (nothing to explain)")
    else:
        lines.append("knobs it changes:")
        lines += ["  " + x for x in format_table(
            ["knob", "default", "candidate"], [list(c) for c in e.changed])]
    lines.append("")
    lines.append("main effects (value vs default; failures counted as failures):")
    mine = {(x.knob, x.value) for x in e.effects}
    rows = [[
        ("* " if (x.knob, x.value) in mine else "  ") + x.knob, x.value, f"{x.n_failed}/{x.n}",
        f"{x.failure_rate:.0%} {_ci(x.failure_ci, '.0%')}", f"{x.default_failure_rate:.0%}",
        f"{x.speedup:.3f}x" if x.speedup is not None else "-", _ci(x.speedup_ci),
        "" if x.speedup is None else ("beyond noise" if x.significant else "within noise"),
        x.method if x.speedup is not None else "",
    ] for x in e.all_effects]
    lines += format_table(["knob", "value", "failed", "failure rate (CI)", "at default", "speed-up",
                           "95% CI", "", "contrast"], rows) if rows else ["  (no knob takes more than one value)"]
    lines.append("(* = a value of this candidate)")
    if e.importance:
        lines.append("")
        lines.append(f"importance (share of explained log-latency variance, {e.importance[0].n} eligible candidates, bootstrap CI):")
        lines += format_table(["knob", "importance", "95% CI"],
                              [[i.knob, f"{i.importance:.0%}", _ci(i.ci, '.0%')] for i in e.importance])
    inter = [i for i in e.interactions if i.ratio is not None or i.pair_failure_rate > i.singles_failure_rate]
    if inter:
        lines.append("")
        lines.append("pairwise interactions (pair speed-up / product of single speed-ups; 1.0 = additive):")
        lines += format_table(
            ["pair", "n", "pair speed-up", "additive", "ratio", "pair fails", "singles fail"],
            [[f"{i.knob_a}={i.value_a} + {i.knob_b}={i.value_b}", i.n_pair,
              f"{i.pair_speedup:.3f}x" if i.pair_speedup else "-",
              f"{i.additive_speedup:.3f}x" if i.additive_speedup else "-",
              f"{i.ratio:.3f}" if i.ratio else "-", f"{i.pair_failure_rate:.0%}",
              f"{i.singles_failure_rate:.0%}"] for i in inter])
    if e.failures:
        lines.append("")
        lines.append("failure triage:")
        for c in e.failures:
            lines.append(f"  {len(c.numbers)} x {shorten(c.signature, 100)}  (#{', #'.join(map(str, c.numbers))})")
            lines.append(f"    {c.explanation}")
            if c.exclude_expression:
                lines.append(f"    exclude with: --expr '{c.exclude_expression}'")
    lines.append("")
    if e.layer_diff is not None:
        lines.append(f"layer diff #{base.number} -> #{rec.number}:")
        lines += diff_lines(e.layer_diff, limit=limit)
    lines += [f"note: {n}" for n in e.notes]
    return lines


class ExplainCommand(Command):
    name = "explain"
    help = "explain the winner (or candidate N): knob effects, failures, layer diff vs the default"
    description = (
        "Explain candidate N of STUDY (default: the study's winner) against the default route:\n"
        "the knobs it changes, every knob value's main effect with a CI (failures counted), an\n"
        "importance ranking, pairwise interactions, failure triage with an excluding expression,\n"
        "and the aligned per-layer diff when both candidates have profiles."
    )

    runs_study_code = True

    def code_study(self, args: argparse.Namespace) -> str | None:
        return args.study if args.capture else None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("number", metavar="N", type=candidate_number, nargs="?", help="candidate (default: winner)")
        parser.add_argument("--capture", action="store_true",
                            help="profile the two candidates from their artifacts if they have no profile.json")
        parser.add_argument("--runs", type=at_least(1), default=30, help="profiled runs when capturing (default 30)")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.cli.diff import ensure_profiles
        from gptuner_core.explain import explain
        from gptuner_core.explain import read_study

        study = Path(args.study)
        facts = read_study(study)
        number = args.number if args.number is not None else facts.winner
        known = {r.number for r in facts.records}
        if number is not None and number not in known:
            msg = f"explain: candidate #{number} is not in '{study}' (candidates: {min(known, default='-')}..{max(known, default='-')})"
            raise UsageError(msg)
        if args.capture and number is not None and facts.records:
            from gptuner_core.explain.study import profiled_number

            by_number = {r.number: r for r in facts.records}
            pair = sorted({profiled_number(facts.records[0]), profiled_number(by_number[number])})
            if len(pair) == 2:
                ensure_profiles(study, pair, capture=True, runs=args.runs)
        from gptuner_core.cli.show import verdict_lines
        from gptuner_core.storage import open_store

        with open_store(study, readonly=True) as store:
            stored = store.get_meta("winner")
        for line in [*verdict_lines(stored), *explanation_lines(explain(study, number, facts=facts))]:
            print(line)
        return 0
