"""``gptuner knobs`` (list or show knobs) and ``gptuner knobs-diff OLD NEW``."""

from __future__ import annotations

import difflib
import json
from typing import TYPE_CHECKING

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError
from gptuner_core.cli._base import add_knob_db_arguments
from gptuner_core.cli._base import load_knob_db
from gptuner_core.cli._base import print_table
from gptuner_core.cli._base import shorten


if TYPE_CHECKING:
    import argparse

    from gptuner_core.knobs import Knob
    from gptuner_core.knobs import KnobDatabase


def values_text(knob: Knob) -> str:
    if knob.values is None:
        return f"unbounded ({knob.unbounded_type})"
    return "[" + "|".join(knob.values) + "]"


def _find_knob(db: KnobDatabase, query: str) -> Knob:
    name = query if query.startswith("-") else f"-{query}"
    knob = db.get(name)
    if knob is not None:
        return knob
    close = difflib.get_close_matches(name, [k.name for k in db], n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    msg = f"Unknown knob: {name} (not among the {len(db)} knobs of tuner {db.tuner_version}{hint})"
    raise UsageError(msg)


class KnobsCommand(Command):
    name = "knobs"
    help = "list the knobs of a knob database, or show one knob"
    description = (
        "List knobs (name, default, allowed values, help) or show one KNOB in detail.\n"
        "KNOB's leading dash is optional: 'gptuner knobs kgen:tiling' and\n"
        "'gptuner knobs -kgen:tiling' are the same. --json re-emits the TensorRT schema."
    )
    value_options = ("--knob-db", "--backend", "--model", "--search", "--namespace")

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        add_knob_db_arguments(parser)
        parser.add_argument("knob", nargs="?", metavar="KNOB", help="show this knob only")
        parser.add_argument(
            "--search", metavar="TEXT", help="only knobs whose name or help contains TEXT"
        )
        parser.add_argument(
            "--namespace", metavar="NS", help="only knobs in namespace NS (e.g. kgen)"
        )
        parser.add_argument(
            "--json", action="store_true", help="print trtexec-style JSON (--helpBuildRoute)"
        )

    def normalize_argv(self, argv: list[str]) -> list[str]:
        """Let ``KNOB`` start with a single dash (``-kgen:tiling``) like trtexec's filter."""
        out: list[str] = []
        knobs: list[str] = []
        joined = super().normalize_argv(argv)
        for i, arg in enumerate(joined):
            if arg == "--":
                knobs.extend(joined[i + 1 :])
                break
            if arg.startswith("-") and not arg.startswith("--") and arg != "-h":
                knobs.append(arg)
            else:
                out.append(arg)
        return out + (["--", *knobs] if knobs else [])

    def run(self, args: argparse.Namespace) -> int:
        db = load_knob_db(args)
        if args.knob:
            knob = _find_knob(db, args.knob)
            if args.json:
                doc = {"tuner_version": db.tuner_version, "tuner_options": [knob.to_json()]}
                print(json.dumps(doc, indent=2))
                return 0
            print_details(knob)
            return 0
        knobs = list(db)
        if args.namespace is not None:
            ns = args.namespace.lstrip("-")
            knobs = [k for k in knobs if k.namespace == ns or k.namespace.startswith(ns + ":")]
        if args.search:
            text = args.search.lower()
            knobs = [k for k in knobs if text in k.name.lower() or text in k.help.lower()]
        if args.json:
            doc = {
                "tuner_version": db.tuner_version,
                "tuner_options": [k.to_json() for k in knobs],
            }
            print(json.dumps(doc, indent=2))
            return 0
        rows = [
            (k.name, k.default, shorten(values_text(k), 30), shorten(k.help, 60)) for k in knobs
        ]
        print_table(("KNOB", "DEFAULT", "VALUES", "HELP"), rows)
        shown = f"{len(knobs)} of {len(db)}" if len(knobs) != len(db) else f"{len(db)}"
        print(f"\n{shown} knobs, tuner_version {db.tuner_version}")
        return 0


def print_details(knob: Knob) -> None:
    fields = [
        ("knob", knob.name),
        ("namespace", knob.namespace or "(none)"),
        ("default", knob.default),
        ("values", values_text(knob)),
        ("allowed_values", knob.allowed_text),
        ("help", knob.help),
    ]
    for key, value in fields:
        print(f"{key + ':':<16}{value}")


class KnobsDiffCommand(Command):
    name = "knobs-diff"
    help = "compare two knob databases (added, removed, default or values changed)"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("old", metavar="OLD", help="older all_build_routes JSON file")
        parser.add_argument("new", metavar="NEW", help="newer all_build_routes JSON file")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.knobs import KnobDatabase
        from gptuner_core.knobs import diff_knob_databases

        diff = diff_knob_databases(
            KnobDatabase.from_file(args.old), KnobDatabase.from_file(args.new)
        )
        print(f"tuner_version: {diff.old_version} -> {diff.new_version}")
        if diff.empty:
            print("no knob differences")
            return 0
        sections = [
            (
                "added",
                [f"{k.name}  default {k.default}  values {values_text(k)}" for k in diff.added],
            ),
            ("removed", [k.name for k in diff.removed]),
            (
                "default changed",
                [f"{c.name}  {c.old.default} -> {c.new.default}" for c in diff.default_changed],
            ),
            (
                "values changed",
                [
                    f"{c.name}  {values_text(c.old)} -> {values_text(c.new)}"
                    for c in diff.values_changed
                ],
            ),
        ]
        for title, lines in sections:
            if lines:
                print(f"{title} ({len(lines)}):")
                for line in lines:
                    print(f"  {line}")
        return 0
