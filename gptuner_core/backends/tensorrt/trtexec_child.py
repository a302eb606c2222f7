"""Finding and running a ``trtexec`` binary: the probe and one child process.

* :func:`probe_trtexec`: the binary exists and ``trtexec --help`` mentions ``--tuneBuildRoutes``
  (the Cookbook's probe; pip wheels ship no trtexec).
* :func:`run_child`: one child with stdout+stderr to a log file and gptuner's own timeout. trtexec
  itself has no per-iteration timeout (``--tuningTimeOut`` is checked between iterations); the
  timeout here is gptuner's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gptuner_core.backends.tensorrt import trtexec_protocol as proto
from gptuner_core.errors import BackendError


HELP_TIMEOUT_S = 60


class TrtexecChildError(BackendError):
    """A trtexec child did not succeed; ``outcome`` holds trtexec's own classification."""

    def __init__(self, msg: str, outcome: proto.ChildOutcome) -> None:
        super().__init__(msg)
        self.outcome = outcome


def resolve_executable(name: str | None = None) -> str | None:
    """Absolute path of the trtexec to use: ``name``, else ``$GPTUNER_TRTEXEC``, else PATH."""
    candidate = name or os.environ.get("GPTUNER_TRTEXEC") or "trtexec"
    if os.sep in candidate:
        return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None
    return shutil.which(candidate)


def run_quick(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL
    )


def probe_trtexec(name: str | None = None) -> tuple[bool, str, str]:
    """``(ok, reason, help_text)``; ``reason`` is precise when not ok. Never raises."""
    exe = resolve_executable(name)
    if exe is None:
        wanted = name or os.environ.get("GPTUNER_TRTEXEC") or "trtexec"
        return False, f"no executable trtexec found (looked for {wanted!r} on PATH); install TensorRT's samples/bin or set the trtexec option", ""
    try:
        res = run_quick([exe, "--help"], HELP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"'{exe} --help' failed ({type(exc).__name__}: {exc})", ""
    text = (res.stdout or "") + (res.stderr or "")
    if "--tuneBuildRoutes" not in text:
        return False, f"'{exe}' has no --tuneBuildRoutes in its --help (expected trtexec from TensorRT >= 11.1 on Linux)", text
    return True, "", text


def run_child(
    argv: list[str], log_path: Path, timeout_s: float = 0, *, cwd: Path | None = None
) -> tuple[int | None, float | None]:
    """Run one child with stdout+stderr to ``log_path``; ``(returncode, timed_out_after_s)``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd
        )
        try:
            rc = proc.wait(timeout=timeout_s if timeout_s and timeout_s > 0 else None)
            return rc, None
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            return rc, float(timeout_s)
