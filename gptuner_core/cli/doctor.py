"""``gptuner doctor``: check a TensorRT machine and print a report to paste into a bug report.

The report (format documented in ``docs/tensorrt.md``)::

    gptuner doctor report
    gptuner 0.1.0, Linux-6.1-x86_64, Python 3.11.7
    [ok]   platform: Linux x86_64, Python 3.11.7
    [FAIL] tensorrt: tensorrt is not importable (No module named 'tensorrt')
    stopped at the first missing requirement: fix it and run 'gptuner doctor' again

One line per check, ``[ok]``/``[FAIL]``, with ``[info]`` lines under a check for what it
observed (route read-back, inspector keys, timing cache, skipped knob entries). Exit status 0 when
every check passed, 1 when one failed. ``--json`` prints the same as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from pathlib import Path

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError


TAGS = {"ok": "[ok]  ", "FAIL": "[FAIL]", "skip": "[skip]", "info": "  [info]"}


def render(checks: list, passed: bool) -> str:
    from gptuner_core import __version__

    lines = ["gptuner doctor report",
             f"gptuner {__version__}, {platform.platform()}, Python {platform.python_version()}"]
    lines += [f"{TAGS.get(c.status, c.status)} {c.name}: {c.detail}".rstrip(": ") for c in checks]
    if passed:
        lines.append("all checks passed")
    else:
        lines.append("stopped at the first missing requirement: fix it and run 'gptuner doctor' again")
    return "\n".join(lines)


class DoctorCommand(Command):
    name = "doctor"
    destinations = {"workdir": None}
    help = "check TensorRT, cuda-python and trtexec here; build and run a tiny model; print a report"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--no-trtexec", action="store_true", help="check only the tensorrt backend")
        parser.add_argument("--workdir", metavar="DIR", help="where the tiny model and engines go (default: a temp dir)")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.backends.tensorrt.doctor_checks import Doctor

        if args.workdir and Path(args.workdir).exists() and not Path(args.workdir).is_dir():
            msg = f"--workdir '{args.workdir}' is not a folder (expected a folder for the tiny model and engines)"
            raise UsageError(msg)
        with tempfile.TemporaryDirectory(prefix="gptuner-doctor-") as tmp:
            workdir = Path(args.workdir) if args.workdir else Path(tmp)
            doctor = Doctor(workdir, trtexec=not args.no_trtexec)
            passed = doctor.run()
        if args.json:
            from gptuner_core import __version__

            out = {"gptuner": __version__, "platform": platform.platform(), "python": platform.python_version(),
                   "passed": passed, "checks": [{"name": c.name, "status": c.status, "detail": c.detail} for c in doctor.checks]}
            print(json.dumps(out, indent=1))
        else:
            print(render(doctor.checks, passed))
        sys.stdout.flush()
        return 0 if passed else 1
