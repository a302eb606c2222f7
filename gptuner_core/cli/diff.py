"""``gptuner diff STUDY A B``: aligned per-layer diff of two candidates' profiles."""

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
    from gptuner_core.profiles import LayerDiff
    from gptuner_core.records import CandidateRecord


def _latency(rec: CandidateRecord) -> str:
    lat = rec.latency
    if lat is None:
        return f"#{rec.number}: {rec.state.value}, no latency"
    return (f"#{rec.number}: screening median {lat.median_ms:.4g} ms "
            f"(one process, spread {lat.ci_low_ms:.4g}-{lat.ci_high_ms:.4g})")


def diff_lines(diff: LayerDiff, *, limit: int | None = 15) -> list[str]:
    """The diff as text: summary, then one row per aligned group (sources first)."""
    lines = [diff.summary()]
    rows = []
    shown = diff.rows if limit is None else diff.rows[:limit]
    for r in shown:
        rows.append([
            shorten(r.group, 34),
            shorten("+".join(r.a_kinds) or "-", 28) + (f" {r.a_precision}" if r.a_precision else ""),
            shorten("+".join(r.b_kinds) or "-", 28) + (f" {r.b_precision}" if r.b_precision else ""),
            f"{r.a_ms:.4f}", f"{r.b_ms:.4f}", f"{r.delta_ms:+.4f}", f"±{r.noise_ms:.4f}",
            f"{r.contribution:+.0%}", "" if r.significant else "within noise",
            shorten("; ".join(r.changes), 60),
        ])
    header = ["layer (ONNX origin)", diff.label_a, diff.label_b, f"{diff.label_a} ms", f"{diff.label_b} ms",
              "delta ms", "noise", "share", "", "what changed"]
    lines += format_table(header, rows)
    if limit is not None and len(diff.rows) > limit:
        lines.append(f"... {len(diff.rows) - limit} more groups (--all shows them)")
    lines += [f"note: {n}" for n in diff.notes]
    return lines


def ensure_profiles(study: Path, numbers: list[int], *, capture: bool, runs: int) -> None:
    """Capture missing profiles when asked; otherwise say how to get them."""
    from gptuner_core.explain import profile_candidate
    from gptuner_core.profiles import has_profile

    missing = [n for n in numbers if not has_profile(study, n)]
    if not missing:
        return
    if not capture:
        msg = (f"candidate(s) {', '.join(f'#{n}' for n in missing)} of '{study}' have no profile.json "
               "(expected one per candidate; add --capture to profile them from their artifacts now)")
        raise UsageError(msg)
    for n in missing:
        print(f"profiling #{n} ...", flush=True)
        profile_candidate(study, n, runs=runs)


class DiffCommand(Command):
    name = "diff"
    help = "aligned per-layer diff of two candidates (time per layer, fusions, precisions, kernels)"
    description = (
        "Align the per-layer profiles of candidates A and B of STUDY by their ONNX origin and list\n"
        "where B gains or loses time against A, sorted by contribution to the end-to-end difference.\n"
        "A delta within the profiles' run-to-run noise is marked and never named as a cause."
    )

    runs_study_code = True

    def code_study(self, args: argparse.Namespace) -> str | None:
        return args.study if args.capture else None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="STUDY")
        parser.add_argument("a", metavar="A", type=candidate_number, help="candidate number (e.g. 0, the default)")
        parser.add_argument("b", metavar="B", type=candidate_number, help="candidate number")
        parser.add_argument("--capture", action="store_true",
                            help="profile candidates without profile.json from their artifacts first")
        parser.add_argument("--runs", type=at_least(1), default=30, help="profiled runs when capturing (default 30)")
        parser.add_argument("--all", action="store_true", help="show every aligned group")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.explain import layer_diff
        from gptuner_core.explain import read_study

        study = Path(args.study)
        facts = read_study(study)
        by_number = {r.number: r for r in facts.records}
        for n in (args.a, args.b):
            if n not in by_number:
                known = sorted(by_number)
                msg = f"diff: candidate #{n} is not in '{study}' (candidates: {known[0] if known else '-'}..{known[-1] if known else '-'})"
                raise UsageError(msg)
        if args.runs < 2:
            msg = f"diff: --runs must be at least 2 (the noise level needs repeated runs; got {args.runs})"
            raise UsageError(msg)
        from gptuner_core.explain.study import no_layers_reason
        from gptuner_core.explain.study import profiled_number

        for n in (args.a, args.b):
            reason = no_layers_reason(study, by_number[n], facts.config)
            if reason:
                raise UsageError(f"diff: {reason}")

        wanted = sorted({profiled_number(by_number[n]) for n in (args.a, args.b)})
        ensure_profiles(study, wanted, capture=args.capture, runs=args.runs)
        a, b = by_number[args.a], by_number[args.b]
        diff = layer_diff(study, a, b)
        assert diff is not None  # both profiles exist now
        from gptuner_core.cli.show import verdict_lines
        from gptuner_core.storage import open_store

        with open_store(study, readonly=True) as store:
            for line in verdict_lines(store.get_meta("winner")):  # the study's answer first
                print(line)
        print(_latency(a))
        print(_latency(b))
        for line in diff_lines(diff, limit=None if args.all else 15):
            print(line)
        return 0
