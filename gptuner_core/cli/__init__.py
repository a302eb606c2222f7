"""``gptuner``: a thin command table over the library (STYLE habit 20).

Commands are registered lazily in :data:`_COMMANDS` as ``name -> "module:Class"``; add one entry
to add a command. Only the command being run is imported (all of them for ``--help``), so a
command whose import fails breaks only itself and is reported when it is used.

Usage and input errors print one line, ``gptuner: error: <message>``, to stderr and exit with
status 2; argparse's own errors are routed the same way. No traceback is printed for them.
Before a command runs, :func:`~gptuner_core.cli._base.check_arguments` refuses empty values and
destinations that are a study's own files (nothing is written before that).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import os
import sys
from typing import TYPE_CHECKING
from typing import NoReturn

from gptuner_core.cli._base import add_trust_argument
from gptuner_core.cli._base import check_study_code
from gptuner_core.errors import GptunerError


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.cli._base import Command


PROG = "gptuner"

#: command name -> "module:Class" (a :class:`~gptuner_core.cli._base.Command` subclass).
_COMMANDS: dict[str, str] = {
    "knobs": "gptuner_core.cli.knobs:KnobsCommand",
    "knobs-diff": "gptuner_core.cli.knobs:KnobsDiffCommand",
    "dry-run": "gptuner_core.cli.dry_run:DryRunCommand",
    "cache": "gptuner_core.cli.cache:CacheCommand",
    "tune": "gptuner_core.cli.tune:TuneCommand",
    "strategies": "gptuner_core.cli.strategies:StrategiesCommand",
    "show": "gptuner_core.cli.show:ShowCommand",
    "stop": "gptuner_core.cli.show:StopCommand",
    "export": "gptuner_core.cli.export:ExportCommand",
    "import": "gptuner_core.cli.export:ImportCommand",
    "replay": "gptuner_core.cli.replay:ReplayCommand",
    "revalidate": "gptuner_core.cli.revalidate:RevalidateCommand",
    "doctor": "gptuner_core.cli.doctor:DoctorCommand",
    "explain": "gptuner_core.cli.explain:ExplainCommand",
    "diff": "gptuner_core.cli.diff:DiffCommand",
    "bundle": "gptuner_core.cli.bundle:BundleCommand",
    "gate": "gptuner_core.cli.bundle:GateCommand",
    "report": "gptuner_core.cli.report:ReportCommand",
    "retune": "gptuner_core.cli.retune:RetuneCommand",
}


class _UsageExit(Exception):
    """argparse reported a usage error (message only, printed by :func:`main`)."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser that raises instead of printing usage and exiting."""

    def error(self, message: str) -> NoReturn:
        sub = self.prog.removeprefix(PROG).strip()
        prefix = f"{sub}: " if sub else ""
        hint = f" (see '{self.prog} --help')"
        raise _UsageExit(f"{prefix}{message}{hint}")


def load_command(name: str) -> Command:
    """Import and instantiate the command registered as ``name``."""
    from gptuner_core.registry import import_target

    return import_target(_COMMANDS[name])()


def _error(message: str) -> int:
    one_line = " ".join(str(message).split())
    print(f"{PROG}: error: {one_line}", file=sys.stderr)
    return 2


def _command_name(argv: Sequence[str]) -> str | None:
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg
    return None


def _build_parser(selected: str | None) -> tuple[_Parser, dict[str, Command], dict[str, str]]:
    from gptuner_core import __version__

    parser = _Parser(
        prog=PROG,
        description="Build-route tuner for TensorRT's Global Performance Tuner and friends.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"{PROG} {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands: dict[str, Command] = {}
    broken: dict[str, str] = {}
    names = [selected] if selected in _COMMANDS else list(_COMMANDS)
    for name in names:
        try:
            command = load_command(name)
        except Exception as exc:  # noqa: BLE001 - one broken command must not break the others
            broken[name] = f"{type(exc).__name__}: {exc}"
            subparsers.add_parser(name, help=f"(unavailable: {broken[name]})", add_help=False)
            continue
        sub = subparsers.add_parser(
            name,
            help=command.help,
            description=command.description or command.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(sub)
        if command.runs_study_code:
            add_trust_argument(sub)
        sub.set_defaults(_command=command, _parser=sub)
        commands[name] = command
    return parser, commands, broken


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``gptuner`` with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    selected = _command_name(args_list)
    if selected is not None and selected not in _COMMANDS:
        known = ", ".join(_COMMANDS)
        return _error(f"unknown command '{selected}' (expected one of: {known})")
    try:
        parser, commands, broken = _build_parser(selected)
        if selected in broken:
            print(
                f"{PROG}: error: command '{selected}' is unavailable: {broken[selected]}",
                file=sys.stderr,
            )
            return 1
        if selected is not None:
            i = args_list.index(selected)
            args_list = args_list[: i + 1] + commands[selected].normalize_argv(args_list[i + 1 :])
        try:
            args, extra = parser.parse_known_args(args_list)
            if extra:
                where = f"{selected}: " if selected else ""
                hint = f"gptuner {selected} --help" if selected else "gptuner --help"
                msg = f"{where}unrecognized arguments: {' '.join(extra)} (see '{hint}')"
                raise _UsageExit(msg)
        except SystemExit as exc:  # --help / --version
            return exc.code if isinstance(exc.code, int) else 0
        command = getattr(args, "_command", None)
        if command is None:
            parser.print_help(sys.stderr)
            return 2
        from gptuner_core.cli._base import check_arguments

        check_arguments(command, args._parser, args)
        check_study_code(command, args)
        return int(command.run(args) or 0)
    except _UsageExit as exc:
        return _error(str(exc))
    except GptunerError as exc:
        return _error(str(exc))
    except RecursionError:
        return _error("an input file is nested too deeply to parse (expected a flat document)")
    except BrokenPipeError:
        # The reader went away (``gptuner dry-run ... | head``): not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        from gptuner_core.errors import os_error_text

        return _error(os_error_text(exc))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def console(argv: Sequence[str] | None = None) -> NoReturn:
    """The console script and ``python -m gptuner_core``: :func:`main` (``argv`` as there), then
    its status. Once torch is imported (a torch study's input shapes import it here) the process
    leaves as the interpreter would (other threads joined, every exit handler run, the output
    flushed) but without its teardown: with torch that took 0.7 s after the verdict, which a
    pipeline waited for."""
    import threading

    status = main(argv)
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)  # CPython's, as at exit
    if "torch" not in sys.modules or run_exit_handlers is None:
        sys.exit(status)
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


__all__ = ["console", "main"]
