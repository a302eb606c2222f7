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
    help = "import a trtexec tuning cache, or a T4 / Kernel Tuner tuning space as a recording"
    description = (
        "--format trtexec: a trtexec --tuningCacheFile (JSONL) becomes a new study (--study).\n"
        "--format t4 | kerneltuner: a brute-forced tuning space (the community's T4 format or\n"
        "Kernel Tuner's cache; .json or .json.gz) becomes a recording that replay, tune on the\n"
        "replay backend, explain and the dashboard read: a recording file (--out, default\n"
        "NAME.recording.json.gz here) or a finished study folder (--study). Every parameter with\n"
        "more than one value is a knob -kt:NAME; failed configurations are BUILD_FAILED; those\n"
        "absent from the file are infeasible. --format auto (default) tells them apart."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("cache", metavar="FILE", help="trtexec cache, T4 file or Kernel Tuner cache")
        parser.add_argument("--format", default="auto", choices=["auto", "trtexec", "t4", "kerneltuner"],
                            help="the file's format (default: detected from the file)")
        parser.add_argument("--study", metavar="DIR", help="write a new study folder")
        parser.add_argument("--out", "-o", "--output", dest="out", metavar="FILE",
                            help="write a recording JSON (.json or .json.gz; T4 / Kernel Tuner "
                            "only; -o / --output as in report and bundle)")

    def run(self, args: argparse.Namespace) -> int:
        from pathlib import Path

        from gptuner_core.cli._base import UsageError

        fmt, doc = args.format, None
        if fmt == "auto":
            from gptuner_core.interop.tuning_spaces import detect_format
            from gptuner_core.interop.tuning_spaces import load_document

            if Path(args.cache).is_file() and not _jsonl(args.cache):
                doc = load_document(args.cache)
                fmt = detect_format(doc) or "trtexec"
                if fmt == "trtexec" and not args.study:
                    msg = (f"import: '{args.cache}' is neither a T4 file (schema_version, metadata, "
                           "results) nor a Kernel Tuner cache (tune_params, cache); for a trtexec "
                           "cache give --study DIR")
                    raise UsageError(msg)
            else:
                fmt = "trtexec"
        if fmt == "trtexec":
            if args.out or not args.study:
                msg = "import --format trtexec writes a study: give --study DIR (and no --out)"
                raise UsageError(msg)
            from gptuner_core.interop.study_cache import import_cache

            n = import_cache(args.cache, args.study)
            print(f"imported {n} rows into {args.study}")
            return 0
        if args.out and args.study:
            msg = "import: give --out FILE or --study DIR, not both"
            raise UsageError(msg)
        from gptuner_core.interop.space_recording import to_recording
        from gptuner_core.interop.space_recording import write_recording
        from gptuner_core.interop.space_recording import write_study
        from gptuner_core.interop.tuning_spaces import read_space

        out = args.study or args.out or default_out(args.cache)
        imported = to_recording(read_space(args.cache, fmt, doc), str(Path(out).resolve()))
        if args.study:
            write_study(imported, out)
        else:
            write_recording(imported, out)
        print(f"imported {imported.summary()} -> {out}")
        print(f"replay with: gptuner replay {out} --budget 200 --seeds 10")
        return 0


def default_out(source: str) -> str:
    """``NAME.recording.json.gz`` in the working folder for ``NAME.json[.gz]``."""
    from pathlib import Path

    name = Path(source).name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return f"{name}.recording.json.gz"


def _jsonl(path: str) -> bool:
    """A trtexec cache: its first line is a whole JSON object and a second line follows."""
    import json

    with open(path, "rb") as fh:
        head = fh.read(2)
        if head == b"\x1f\x8b":
            return False
        fh.seek(0)
        first = fh.readline()
        second = fh.readline()
    if not second.strip():
        return False
    try:
        json.loads(first)
    except ValueError:
        return False
    return True
