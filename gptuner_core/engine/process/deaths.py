"""Whose fault a candidate's death is: the route's, or the machinery's (run it again).

A route's own crash is recorded (CRASHED) and never run again: a signal it raises itself
(SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL), a non-zero exit, a missing or torn result. An
*infrastructure death* is not the route's doing, and the candidate runs again, as a killed tuner's
candidate does on ``--continue``:

* the launcher (fork server) died: its children die with it (``PR_SET_PDEATHSIG``);
* the child was killed from outside while the tuner lives: SIGKILL, SIGTERM, SIGHUP or SIGINT
  (an operator, a supervisor, a harness). Timeouts are the tuner's own kills, never retried.

The kernel's out-of-memory killer also sends SIGKILL, and that one *is* the route's doing: where the
cgroup counts its kills (``memory.events`` in cgroup v2, ``memory.oom_control`` in v1) a kill
counted during the attempt is the route's crash at once. Where nothing counts them, the retries are
bounded (:data:`MAX_ATTEMPTS`): a route killed in each attempt is CRASHED, the error saying how often
("... in each of 3 attempts (out of memory?)"), since a route that runs out of memory does so again.
"""

from __future__ import annotations

import contextlib
import signal
from pathlib import Path


#: attempts of one candidate's process when something outside kills it (the first included)
MAX_ATTEMPTS = 3
#: signals a route does not send itself: someone outside killed its process
EXTERNAL = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT})
_CGROUP = Path("/sys/fs/cgroup")


def _counter(path: Path) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text(encoding="utf-8").splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    return None


def oom_kills() -> int | None:
    """Processes the out-of-memory killer has killed in this process's cgroup so far (its
    children are in it too), or ``None`` where the cgroup does not say."""
    places = [_CGROUP / "memory.events", _CGROUP / "memory" / "memory.oom_control"]
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines():
            _, controllers, path = line.split(":", 2)
            if controllers == "":
                places.insert(0, _CGROUP / path.lstrip("/") / "memory.events")
            elif "memory" in controllers.split(","):
                places.insert(0, _CGROUP / "memory" / path.lstrip("/") / "memory.oom_control")
    for place in places:
        count = _counter(place)
        if count is not None:
            return count
    return None


def infrastructure_death(exit_code: int | None, lost: str, oom_before: int | None) -> str:
    """Why this death is not the route's (``""``: it is): ``lost`` names a launcher that died;
    ``exit_code`` a signal from outside, unless the out-of-memory killer counted a kill since
    ``oom_before``."""
    if lost:
        return lost
    if exit_code is None or exit_code >= 0 or -exit_code not in EXTERNAL:
        return ""
    if -exit_code == signal.SIGKILL and oom_before is not None:
        now = oom_kills()
        if now is not None and now > oom_before:
            return ""
    return f"killed from outside by {signal.Signals(-exit_code).name}"


def oom_note(exit_code: int | None, oom_before: int | None) -> str:
    """What a SIGKILL's error adds: the out-of-memory killer counted it, or it may have been it."""
    if exit_code != -signal.SIGKILL:
        return ""
    now = oom_kills() if oom_before is not None else None
    return " (killed by the out-of-memory killer)" if now is not None and now > oom_before else " (out of memory?)"


__all__ = ["EXTERNAL", "MAX_ATTEMPTS", "infrastructure_death", "oom_kills", "oom_note"]
