"""``gptuner export`` (study -> trtexec tuning cache) and ``gptuner import`` (the reverse)."""

from __future__ import annotations

import argparse

from gptuner_core.cli._base import Command


class ExportCommand(Command):
    name = "export"
    help = "export a study as a trtexec tuning cache (JSONL), resumable by 'trtexec --continue'"
    destinations = {"trtexec_cache": "study"}

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="DIR")
        parser.add_argument("--trtexec-cache", required=True, metavar="FILE",
                            help="write the study here in trtexec's --tuningCacheFile format "
                            "(outside the study's own files)")
        parser.add_argument("--all-rows", action="store_true",
                            help="write every candidate in evaluation order (viewable, not resumable)")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.interop.trtexec_export import export_study
        from gptuner_core.storage import open_store

        with open_store(args.study, readonly=True) as store:
            result = export_study(store, args.trtexec_cache, study_dir=args.study, all_rows=args.all_rows)
        result.cache.write(args.trtexec_cache)
        print(f"wrote {len(result.cache.rows)} rows to {args.trtexec_cache}")
        if result.resumable:
            print(f"resume with: trtexec --continue --tuningCacheFile={args.trtexec_cache}")
        for note in result.notes:
            print(f"note: {note}")
        return 0


class ImportCommand(Command):
    name = "import"
    help = "import a trtexec tuning cache (JSONL) as a new study"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("cache", metavar="FILE", help="trtexec --tuningCacheFile output")
        parser.add_argument("--study", required=True, metavar="DIR", help="new study folder")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.interop.study_cache import import_cache

        n = import_cache(args.cache, args.study)
        print(f"imported {n} rows into {args.study}")
        return 0
