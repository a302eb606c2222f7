"""The command contract and helpers shared by every ``gptuner`` sub-command.

A command is a small class: ``name``, ``help``, ``add_arguments(parser)`` and ``run(args) -> int``.
It does nothing the library cannot do; it parses arguments, calls the library and prints.
User errors are raised as :class:`~gptuner_core.errors.GptunerError` subclasses; ``main`` prints
them as one ``gptuner: error: ...`` line and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from typing import ClassVar
from typing import TextIO

from gptuner_core.errors import GptunerError


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Sequence

    from gptuner_core.knobs import KnobDatabase


class UsageError(GptunerError, ValueError):
    """A command line is invalid (missing/conflicting options, bad value)."""


class Command:
    """One ``gptuner`` sub-command.

    Subclasses set ``name`` and ``help`` and override :meth:`add_arguments` and :meth:`run`.
    """

    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: options taking a value that may start with '-' (``--expr -k=[a|b]``): joined as ``--opt=v``
    value_options: ClassVar[tuple[str, ...]] = ()
    #: argument names (dests) whose value may be empty (``gate --route ''``: the default route);
    #: every other empty value is refused before the command runs (``--study ''`` was the cwd)
    empty_ok: ClassVar[tuple[str, ...]] = ()
    #: written path (dest) -> the study it must not overwrite (dest, or None): refused when it is
    #: one of that study's own files or of any study it lies in (``export ST --trtexec-cache
    #: ST/study.sqlite`` destroyed the study); ``output_suffixes``: siblings written beside it
    destinations: ClassVar[dict[str, str | None]] = {}
    output_suffixes: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: the command may import code a study names: it takes ``--trust-study-code``
    runs_study_code: ClassVar[bool] = False

    def code_study(self, args: argparse.Namespace) -> str | None:
        """The study folder whose named code this run would import (``None``: it runs none)."""
        return None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Declare the command's arguments on its own sub-parser."""

    def normalize_argv(self, argv: list[str]) -> list[str]:
        """Rewrite the command's own arguments before parsing.

        The default joins ``--opt VALUE`` into ``--opt=VALUE`` for :attr:`value_options`, so a
        value that starts with a dash (an expression, a knob name) is not taken for an option.
        """
        out: list[str] = []
        i = 0
        while i < len(argv):
            arg = argv[i]
            if arg == "--":
                out.extend(argv[i:])
                break
            if arg in self.value_options and i + 1 < len(argv):
                out.append(f"{arg}={argv[i + 1]}")
                i += 2
                continue
            out.append(arg)
            i += 1
        return out

    def run(self, args: argparse.Namespace) -> int:
        """Do the work; return the exit status. Raise GptunerError for user errors."""
        raise NotImplementedError


def at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``minimum`` (and <= ``maximum``); ``explain --runs -1``
    was accepted."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum or (maximum is not None and value > maximum):
            bound = f" and <= {maximum}" if maximum is not None else ""
            msg = f"expected an integer >= {minimum}{bound} (got {text!r})"
            raise argparse.ArgumentTypeError(msg)
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


#: a candidate number (what a study's store can hold: SQLite's 64-bit integers)
candidate_number = at_least(0, 2**63 - 1)


def _flag(parser: argparse.ArgumentParser, dest: str) -> tuple[str, str]:
    """The flag a user typed for ``dest`` (``--study``, or the positional's metavar) and what it takes."""
    for action in parser._actions:  # noqa: SLF001 - argparse has no public accessor
        if action.dest == dest:
            names = sorted(action.option_strings, key=len)
            flag = names[-1] if names else str(action.metavar or dest.upper())
            takes = str(action.metavar or dest.upper()) if names else str(action.help or "a value")
            return flag, takes
    return dest.upper(), "a value"


def given_flags(args: argparse.Namespace, *, besides: set[str]) -> list[str]:
    """The flags (and positionals) given a value other than their default, ``besides`` these
    dests: what a mode that ignores them (``tune --config``) must refuse rather than drop."""
    parser = getattr(args, "_parser", None)
    if parser is None:
        return []
    out = []
    for action in parser._actions:  # noqa: SLF001 - argparse has no public accessor
        if action.dest in besides or action.dest == "help" or not hasattr(args, action.dest):
            continue
        if getattr(args, action.dest) != action.default:
            names = sorted(action.option_strings, key=len)
            out.append(names[-1] if names else str(action.metavar or action.dest.upper()))
    return out


def check_arguments(command: Command, parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The checks every command shares, before it runs: no empty values (an empty path is the
    current folder), no destination over a study's own files."""
    for dest, value in vars(args).items():
        if dest.startswith("_") or dest in command.empty_ok:
            continue
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            flag, takes = _flag(parser, dest)
            msg = f"{command.name}: {flag} is empty (expected {takes}; got {value!r})"
            raise UsageError(msg)
    from gptuner_core.engine.files.destinations import check_destination

    for dest, study_dest in command.destinations.items():
        target = getattr(args, dest, None)
        study = getattr(args, study_dest, None) if study_dest else None
        if target:
            check_destination(study, target, _flag(parser, dest)[0],
                              suffixes=command.output_suffixes.get(dest, ("",)))
def check_study_code(command: Command, args: argparse.Namespace) -> None:
    """Refuse, before anything runs, a study naming code the user did not consent to run."""
    folder = command.code_study(args)
    if folder is not None:
        from gptuner_core.study_code import require_consent

        require_consent(folder, trusted=bool(getattr(args, "trust_study_code", False)))


def add_trust_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-study-code", action="store_true",
        help="allow importing the code the study names (a task metric module:fn or file.py:fn, a "
        "torch factory, a module:Class backend, a trtexec path): refused without it, since a study "
        "folder may come from someone else")


# -- knob databases -----------------------------------------------------------------------
def add_knob_db_arguments(parser: argparse.ArgumentParser) -> None:
    """``--knob-db FILE`` or ``--backend NAME --model FILE``."""
    group = parser.add_argument_group("knob database (one source)")
    group.add_argument(
        "--knob-db", metavar="FILE", help="all_build_routes JSON file (TensorRT schema)"
    )
    group.add_argument(
        "--backend", metavar="NAME", help="ask this backend to describe --model's knobs"
    )
    group.add_argument("--model", metavar="FILE", help="model file the backend describes")


def missing_model_file(model: str) -> str | None:
    """The file a ``--model`` value needs that does not exist, or ``None``.

    A model is a file (``.onnx``, ``.pt2``, an engine), or an entry point ``file.py:factory`` /
    ``package.module:factory`` (the torch backend's forms): only the file part must exist, and an
    importable module name is left to the backend to resolve.
    """
    if Path(model).exists():
        return None
    target, colon, attr = model.rpartition(":")
    if colon and target and attr.isidentifier():
        if target.endswith(".py") or "/" in target or "\\" in target:
            return None if Path(target).is_file() else target
        return None  # package.module:factory
    return model


def load_knob_db(args: argparse.Namespace) -> KnobDatabase:
    """Load the database named by ``--knob-db`` or by ``--backend``/``--model``."""
    from gptuner_core.knobs import KnobDatabase

    knob_db = getattr(args, "knob_db", None)
    backend = getattr(args, "backend", None)
    model = getattr(args, "model", None)
    if knob_db and (backend or model):
        msg = "use either --knob-db FILE or --backend NAME --model FILE, not both"
        raise UsageError(msg)
    if knob_db:
        return KnobDatabase.from_file(knob_db)
    if model is None:
        if backend:
            msg = f"--backend {backend} needs --model FILE (the model whose knobs to describe)"
        else:
            msg = "a knob database is needed: give --knob-db FILE or --backend NAME --model FILE"
        raise UsageError(msg)
    path = Path(model)
    missing = missing_model_file(model)
    if missing is not None:
        msg = (
            f"--model '{model}': file not found"
            if missing == model
            else f"--model '{model}': file '{missing}' not found"
        )
        raise UsageError(msg)
    from gptuner_core.backends import default_backend_name
    from gptuner_core.backends import get_backend

    name = backend or default_backend_name()
    return get_backend(name).describe(path)


# -- output -------------------------------------------------------------------------------
def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Left-aligned text columns separated by two spaces (no pandas)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        lines.append(line.rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], out: TextIO | None = None
) -> None:
    out = out or sys.stdout
    for line in format_table(headers, rows):
        print(line, file=out)


def shorten(text: str, width: int) -> str:
    """One line of at most ``width`` characters, ``...`` when cut."""
    one = " ".join(text.split())
    return one if len(one) <= width else one[: max(width - 3, 0)] + "..."
