"""Rewrite references to engine modules moved into rooms by issue 42 (``engine/verdict.py`` is now
``engine/decide/verdict.py``...): for merging a branch started before the move, or an old script.

    python scripts/engine_rooms.py [PATH ...]     # default: every tracked file; prints what changed

Dotted names (``gptuner_core.engine.tuner``), ``from gptuner_core.engine import verdict``, paths
(``gptuner_core/engine/tuner.py``) and, in .py/.md files, short references (``engine.rounds``).
Running it twice changes nothing the second time. Then ``ruff check --fix`` re-sorts the imports.
A bare ``engine.loop`` is left alone (it names the room now). After merging issue 40's branch:
take its side of the two conflicts (cli/replay.py, engine/decide/finish.py), run this, then ruff.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


ROOMS = {
    "decide": ("verdict", "ties", "finish", "shape_revalidation", "pairwise_jobs", "pairwise"),
    "evaluate": ("evaluator", "recorded", "rounds", "round_prefetch"),
    "loop": ("tuner", "loop_parts", "loop", "sink", "eta", "simulate"),
    "files": ("workspace", "inputs", "artifacts", "destinations", "export"),
}
ROOM = {m: r for r, ms in ROOMS.items() for m in ms}
_NAMES = "|".join(sorted(ROOM, key=len, reverse=True))
_MEMBERS = "|".join(ROOMS["loop"])
# ``loop`` is a room and a module: only ``engine.loop.NAME`` / ``engine.loop import NAME`` with NAME
# not a module of the room is the old module (engine.loop.run_loop); a bare engine.loop is the room
_OLD_LOOP = re.compile(rf"(?:\.| import )(?!(?:{_MEMBERS})\b)\w")
DOTTED = re.compile(rf"gptuner_core\.engine\.({_NAMES})\b(?!\.py)(?!/)")
FROM = re.compile(r"^([ \t]*)from gptuner_core\.engine import (\w+(?: as \w+)?(?:, *\w+(?: as \w+)?)*)[ \t]*$", re.M)
SLASHED = re.compile(rf"gptuner_core/engine/({_NAMES})\.py\b")
SHORT = re.compile(rf"(?<![\w./])engine\.({_NAMES})\b(?!\.py)(?!/)")
SHORT_PATH = re.compile(rf"(?<![\w/])engine/({_NAMES})\.py\b")
SUFFIXES = (".py", ".md", ".toml", ".sh", ".cfg", ".txt", ".yml", ".yaml", ".ini")


def _from_rooms(m: re.Match[str]) -> str:
    """``from gptuner_core.engine import recorded, tuner`` -> one import line per room."""
    indent, names = m[1], [n.strip() for n in m[2].split(",")]
    if not all(n.split(" as ")[0] in ROOM for n in names):
        return m[0]
    lines = dict.fromkeys(ROOM[n.split(" as ")[0]] for n in names)
    return "\n".join(f"{indent}from gptuner_core.engine.{r} import "
                     + ", ".join(n for n in names if ROOM[n.split(" as ")[0]] == r) for r in lines)


def rewrite(text: str, *, short: bool) -> str:
    """``text`` with every moved module's old name replaced by its room's."""
    def room(m: re.Match[str], fmt: str) -> str:
        if m[1] == "loop" and not _OLD_LOOP.match(m.string, m.end()):
            return m[0]
        return fmt.format(room=ROOM[m[1]], mod=m[1])

    text = DOTTED.sub(lambda m: room(m, "gptuner_core.engine.{room}.{mod}"), text)
    text = FROM.sub(_from_rooms, text)
    text = SLASHED.sub(lambda m: room(m, "gptuner_core/engine/{room}/{mod}.py"), text)
    if short:
        text = SHORT.sub(lambda m: room(m, "engine.{room}.{mod}"), text)
        text = SHORT_PATH.sub(lambda m: room(m, "engine/{room}/{mod}.py"), text)
    return text


def main(paths: list[str]) -> int:
    if not paths:
        paths = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    for name in paths:
        path = Path(name)
        if path.suffix not in SUFFIXES or not path.is_file() or path.name == Path(__file__).name:
            continue
        old = path.read_text(encoding="utf-8")
        new = rewrite(old, short=path.suffix in (".py", ".md"))
        if new != old:
            path.write_text(new, encoding="utf-8")
            print(f"rewrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
