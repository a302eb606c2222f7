"""docs/ci.md cannot rot: every ``gptuner`` command line in its code blocks names a registered
command and options that command accepts."""

from __future__ import annotations

import argparse
import re
import shlex

from models import REPO

from gptuner_core.cli import _COMMANDS
from gptuner_core.cli import load_command


def _command_lines() -> list[list[str]]:
    text = (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, flags=re.S)
    lines = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            m = re.search(r"\bgptuner ([a-z][a-z-]*)\b(.*)", line)
            if m and not line.lstrip().startswith(("pip", "#")):
                lines.append([m.group(1), *shlex.split(m.group(2).split("#")[0])])
    return lines


def test_every_documented_command_line_parses() -> None:
    lines = _command_lines()
    assert {line[0] for line in lines} >= {"tune", "bundle", "gate", "report", "retune"}
    for name, *argv in lines:
        assert name in _COMMANDS, name
        parser = argparse.ArgumentParser(prog=f"gptuner {name}")
        load_command(name).add_arguments(parser)
        known = set(parser._option_string_actions)  # noqa: SLF001 - the parser's own option table
        for arg in argv:
            if arg.startswith("-") and not re.fullmatch(r"-[a-z]+:.*", arg):
                assert arg.split("=")[0] in known, f"gptuner {name}: {arg} is not an option"
