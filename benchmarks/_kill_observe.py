"""What the kill harness observes of a killed study: our processes left behind (orphans), the
store and the folder as a reader finds them, and the status ``gptuner show`` reports.
Read-only: nothing here touches the tuner's files (``benchmarks/kill_harness.py``)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gptuner_core.storage import STORE_FILENAME
from gptuner_core.storage import open_store


ROOT = Path(__file__).resolve().parents[1]
#: the environment variable marking the processes a launch started (orphans are found by it)
MARKER = "GPTUNER_KILL_HARNESS"


def environment(token: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    if token:
        env[MARKER] = token
    return env


def ancestors() -> set[int]:
    """This process and its ancestors (their command lines may name the study folders)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return pids


def our_processes(token: str, study: Path | None) -> list[tuple[int, str]]:
    """Live processes (not zombies) carrying ``token`` in their environment or naming ``study``."""
    found, mine = [], ancestors()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        try:
            stat = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            if stat[0] in ("Z", "X"):
                continue
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            try:
                marked = f"{MARKER}={token}".encode() in Path(entry.path, "environ").read_bytes()
            except OSError:
                marked = False
        except (OSError, IndexError):
            continue
        if marked or (study is not None and str(study) in cmdline):
            found.append((int(entry.name), cmdline.strip()))
    return found


def children(pid: int) -> list[tuple[int, str]]:
    """Live children of ``pid`` (not zombies), oldest first, with their command lines."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            if stat[0] in ("Z", "X") or int(stat[1]) != pid:
                continue
            cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found.append((int(stat[19]), int(entry.name), cmdline.strip()))
        except (OSError, IndexError, ValueError):
            continue
    return [(p, cmd) for _, p, cmd in sorted(found)]


def fork_server_target(tuner: int, aim: str, study: Path) -> int | None:
    """The pid a fork-server aim kills while the tuner lives: ``launcher`` (its launcher process),
    ``default_child`` (the process of candidate #0 while it runs) or ``child`` (any candidate's,
    drift's or re-validation's process); ``None`` while there is none."""
    launchers = [p for p, cmd in children(tuner) if "launcher_main import serve" in cmd]
    if aim == "launcher":
        return launchers[0] if launchers else None
    forked = [p for launcher in launchers for p, _ in children(launcher)]
    if aim == "default_child":
        running = (study / "candidates" / "00000").is_dir() and not (study / "candidates" / "00000" / "result.json").exists()
        forked = forked if running and not (study / "candidates" / "00001").exists() else []
    return forked[-1] if forked else None


def wait_orphans(token: str, study: Path, grace: float) -> list[tuple[int, str]]:
    deadline = time.monotonic() + grace
    while (left := our_processes(token, study)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid, _ in left:  # clean up so the next launch starts clean (they are ours)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return left


def tail(path: Path, lines: int = 3) -> str:
    text = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return " | ".join(line.strip() for line in text[-lines:]) or "(no output)"


# -- the store and the folder ------------------------------------------------------------------
def read_study(study: Path) -> dict[str, Any]:
    """What the store says, or why it cannot be read (read-only, never blocks the tuner)."""
    if not (study / STORE_FILENAME).is_file():
        return {"initialised": False, "why": f"no {STORE_FILENAME}"}
    try:
        with open_store(study, readonly=True) as store:
            config = store.config()
            records = store.candidates(with_samples=True)
            return {
                "initialised": bool(config), "records": [r.to_json() for r in records],
                "status": store.get_meta("status"), "winner": store.get_meta("winner"),
                "baselines": sorted(e.payload.get("after_candidate") for e in store.events("baseline")),
                "revalidations": len(store.events("revalidation")),
                "why": "" if config else "store without a configuration",
            }
    except Exception as exc:  # noqa: BLE001 - StoreError, sqlite3.Error...: the folder state is the finding
        return {"initialised": False, "why": f"{type(exc).__name__}: {exc}"}


def folder_state(study: Path) -> str:
    if not study.exists():
        return "folder absent"
    names = sorted(p.name + ("/" if p.is_dir() else f" ({p.stat().st_size} B)") for p in study.iterdir())
    info = read_study(study)
    store = (f"store initialised, {len(info['records'])} candidates, status {info['status']!r}"
             if info["initialised"] else f"store: {info['why']}")
    return f"{', '.join(names) or 'empty'}; {store}"


def show_status(study: Path) -> str:
    """The status word of ``gptuner show`` (first line ``study DIR: STATUS ...``), or its error."""
    out = subprocess.run([sys.executable, "-m", "gptuner_core", "show", str(study), "--limit", "1"],
                         capture_output=True, text=True, env=environment(None), timeout=120, check=False)
    first = (out.stdout.strip().splitlines() or [""])[0]
    m = re.match(r"study .*?: (\S+)", first)
    return m.group(1) if m else f"(show failed: {(out.stderr or out.stdout).strip()[-200:]})"
