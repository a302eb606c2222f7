"""A pre-imported launcher process that forks a fresh child per candidate (used by ``isolation``).

Why: a ``spawn`` child starts a new interpreter and imports numpy and gptuner_core before it can
report its first phase (hundreds of milliseconds per candidate). The launcher pays those imports
once; each candidate is then a ``fork`` of it: still a fresh process no candidate has run in
(children are forked from the launcher, never from each other), so nothing a candidate does is seen
by the next one. What runs inside the launcher, and its rules, is ``launcher_main``.

Each request carries the caller's environment, working directory and ``sys.path`` at that moment.
A launcher whose start-up environment no longer matches the caller's (``sys.path``, interpreter,
import-relevant variables) is replaced, and one that died is restarted. There is one launcher per
kind (``launcher_main.KINDS``): ``cpu`` (no torch) and ``torch``, the fork server of torch on a GPU
(torch, Inductor and the backend preloaded, CUDA never initialised in it).

Death chain: the caller dies (even by SIGKILL) -> the kernel closes its end of the control socket
-> the launcher kills its children and exits; each child also has ``PR_SET_PDEATHSIG`` = SIGKILL
towards the launcher. The launcher itself gets no ``PR_SET_PDEATHSIG``: Linux ties it to the
*thread* that started the process, and a launcher shared by a process must not die with one
short-lived thread.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from gptuner_core.engine.process import launcher_main
from gptuner_core.engine.process.launcher_main import MAX_MSG


#: what a new launcher imports before its first fork (a module-level name so tests can extend it)
PRELOAD = launcher_main.PRELOAD


#: environment variables that change what the preloaded imports did: a change restarts the launcher
_KEY_PREFIXES = ("PYTHON", "LD_", "OPENBLAS", "GOTO_", "OMP_", "MKL_", "NUMPY", "NPY_", "PROTOCOL_BUFFERS")
#: also for a ``torch`` launcher: what torch, Inductor, Triton and CUDA read when imported
_TORCH_PREFIXES = ("TORCH", "PYTORCH", "TRITON", "CUDA", "NVIDIA", "CUBLAS", "CUDNN", "NCCL", "KMP_")
#: read again by each forked child (``launcher_main._refresh_torch``): no restart when it changes
_REFRESHED = frozenset({"TORCHINDUCTOR_COMPILE_THREADS", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"})
READY_TIMEOUT_S = 120.0
_log = logging.getLogger(__name__)
FORK_TIMEOUT_S = 30.0


class LauncherUnavailable(Exception):  # noqa: N818 - internal signal, always answered by spawn
    """The launcher cannot fork this child; the caller falls back to spawn."""


class LaunchedChild:
    """A child forked by the launcher; quacks like ``multiprocessing.Process`` for the poll loop."""

    def __init__(self, launcher: Launcher, sock: socket.socket, pid: int) -> None:
        self._launcher = launcher
        self._sock: socket.socket | None = sock
        self.pid = pid
        self.exitcode: int | None = None
        self.lost = ""  # why the exit status is unknown (the launcher died)

    def join(self, timeout: float | None = None) -> None:
        if self._sock is None:
            return
        ready, _, _ = select.select([self._sock], [], [], timeout)
        if not ready:
            return
        try:
            data = self._sock.recv(MAX_MSG)
        except OSError:
            data = b""
        if data:
            self.exitcode = int(json.loads(data)["exit"])
        else:  # the launcher died: PR_SET_PDEATHSIG has SIGKILLed this child
            self.exitcode = -signal.SIGKILL
            self.lost = "the launcher process died and its children with it"
        self.close()

    def is_alive(self) -> bool:
        self.join(0)
        return self.exitcode is None and self._sock is not None

    def kill(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.send(b"kill")

    def close(self) -> None:
        """Stop supervising: the launcher kills the child if it still runs."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            self._launcher.release()


def _key(kind: str = "cpu") -> tuple[Any, ...]:
    prefixes = _KEY_PREFIXES + (_TORCH_PREFIXES if kind == "torch" else ())
    env = tuple(sorted((k, v) for k, v in os.environ.items()
                       if k.startswith(prefixes) and k not in _REFRESHED))
    relative = any(not p or not os.path.isabs(p) for p in sys.path)
    return (kind, sys.executable, tuple(sys.path), env, os.getcwd() if relative else "")


class Launcher:
    """One launcher process and the caller's end of its control socket."""

    def __init__(self, preload: tuple[str, ...] | None = None, kind: str = "cpu") -> None:
        self.key = _key(kind)
        self.kind = kind
        self._active = 0
        self._retired = False
        self._lock = threading.Lock()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        if preload is None:
            preload = PRELOAD if kind == "cpu" else launcher_main.KINDS[kind][0]
        config = {"fd": theirs.fileno(), "parent_pid": os.getpid(), "sys_path": list(sys.path),
                  "preload": list(preload), "kind": kind}
        # a torch.cuda.is_available() in the launcher must not initialise the driver; no
        # Inductor compile-worker pool in it (each child reads its own setting again)
        extra = {"PYTORCH_NVML_BASED_CUDA_CHECK": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"} \
            if kind == "torch" else {}
        # once it has served (its children killed and reaped), it leaves without the interpreter's
        # teardown: with torch imported that took about 1 s, which the caller's close waits for
        code = ("import json, os, sys; c = json.loads(sys.argv[1]); sys.path[:] = c['sys_path']; "
                "from gptuner_core.engine.process.launcher_main import serve; serve(c); os._exit(0)")
        flags = subprocess._args_from_interpreter_flags()  # noqa: SLF001 - as multiprocessing does
        try:
            self.proc = subprocess.Popen(
                [sys.executable, *flags, "-c", code, json.dumps(config)], pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=dict(os.environ, OPENBLAS_NUM_THREADS="1", **extra),
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self._ctrl = ours
        ready = self._answer(ours, READY_TIMEOUT_S)
        if not ready.get("ready"):
            self.close()
            msg = f"the launcher did not start ({ready.get('error', 'no answer')})"
            raise LauncherUnavailable(msg)
        self.pid = int(ready["pid"])
        #: why it would refuse to fork right after its preload ("": it forks)
        self.unsafe = str(ready.get("unsafe") or "")
        #: the preloaded module after which it became unsafe ("" : none)
        self.unsafe_after = str(ready.get("unsafe_after") or "")
        self.preload = tuple(preload)

    def _answer(self, sock: socket.socket, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([sock], [], [], min(0.5, max(deadline - time.monotonic(), 0)))
            if ready:
                try:
                    return json.loads(sock.recv(MAX_MSG) or b'{"error": "the launcher exited"}')
                except (OSError, ValueError) as exc:
                    return {"error": f"unreadable answer from the launcher ({exc})"}
            if self.proc.poll() is not None:
                return {"error": f"the launcher exited with status {self.proc.returncode}"}
            if time.monotonic() >= deadline:
                return {"error": f"no answer within {timeout:g} s"}

    def alive(self) -> bool:
        return self.proc.poll() is None

    def launch(self, entry: str, args: list[Any], *, log: str = "", warm: tuple[str, ...] = ()) -> LaunchedChild:
        """Fork ``entry(*args, launcher_pid)`` ("module:function") with the caller's environment,
        directory and ``sys.path``; raises :class:`LauncherUnavailable` when the launcher refuses
        (unsafe to fork), does not answer or has died. ``warm``: torch model texts a ``torch``
        launcher imports (once) before forking."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        req = {"entry": entry, "args": args, "log": log, "env": dict(os.environ),
               "cwd": os.getcwd(), "sys_path": list(sys.path), "warm": list(warm)}
        try:
            try:
                socket.send_fds(self._ctrl, [json.dumps(req).encode()], [theirs.fileno()])
            except OSError as exc:
                msg = f"the launcher is gone ({exc})"
                raise LauncherUnavailable(msg) from None
            finally:
                theirs.close()
            answer = self._answer(ours, FORK_TIMEOUT_S)
        except BaseException:
            ours.close()
            raise
        if "pid" not in answer:
            ours.close()
            raise LauncherUnavailable(answer.get("refused") or answer.get("error") or "no pid")
        with self._lock:
            self._active += 1
        return LaunchedChild(self, ours, int(answer["pid"]))

    def warm(self, models: tuple[str, ...]) -> None:
        """Have a ``torch`` launcher import these model modules now, before any fork asks for
        them (nothing is forked; a launcher of another kind ignores it)."""
        if models:
            with contextlib.suppress(OSError):
                self._ctrl.send(json.dumps({"warm": list(models)}).encode())

    def release(self) -> None:
        with self._lock:
            self._active -= 1
            done = self._retired and self._active <= 0
        if done:
            self.close()

    def retire(self) -> None:
        """Close once the children it still runs are done (they would die with it)."""
        with self._lock:
            self._retired = True
            done = self._active <= 0
        if done:
            self.close()

    def close(self) -> None:
        """Close the control socket: the launcher kills any children it still has and exits."""
        self._ctrl.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_shared: Launcher | None = None  # the cpu launcher (the name tests look at)
_others: dict[str, Launcher] = {}  # the launchers of other kinds (torch)
_shared_lock = threading.Lock()
_start_failures: dict[str, int] = {}
MAX_START_FAILURES = 3


def shared(kind: str = "cpu") -> Launcher:
    """The process's launcher of ``kind``: started on first use, restarted when it died or when
    the caller's environment no longer matches the one it started with."""
    global _shared  # noqa: PLW0603 - one launcher per kind and process
    with _shared_lock:
        current = _shared if kind == "cpu" else _others.get(kind)
        if current is not None and current.alive() and current.key == _key(kind):
            return current
        if current is not None:
            _set(kind, None)
            current.retire()
        failures = _start_failures.get(kind, 0)
        if failures >= MAX_START_FAILURES:
            msg = f"the {kind} launcher failed to start {failures} times; using spawn"
            raise LauncherUnavailable(msg)
        try:
            started = Launcher(kind=kind)
            if started.unsafe and started.unsafe_after in started.preload and kind == "torch":
                safe = started.preload[: started.preload.index(started.unsafe_after)]
                _log.warning("the torch fork server cannot fork after importing %s (%s); "
                             "restarting it with %s", started.unsafe_after, started.unsafe, ", ".join(safe))
                started.close()
                started = Launcher(preload=safe, kind=kind)
        except (LauncherUnavailable, OSError) as exc:
            _start_failures[kind] = failures + 1
            raise LauncherUnavailable(str(exc)) from None
        _start_failures[kind] = 0
        _set(kind, started)
        return started


def _set(kind: str, launcher: Launcher | None) -> None:
    global _shared  # noqa: PLW0603
    if kind == "cpu":
        _shared = launcher
    elif launcher is None:
        _others.pop(kind, None)
    else:
        _others[kind] = launcher


def shutdown() -> None:
    """Stop the process's launchers (at exit; a later ``shared()`` starts a new one)."""
    global _shared  # noqa: PLW0603
    with _shared_lock:
        current = [_shared, *_others.values()]
        _shared = None
        _others.clear()
    for launcher in current:
        if launcher is not None:
            launcher.close()


def _forget_after_fork() -> None:
    """A forked copy of the caller must not hold the launchers' control sockets open."""
    global _shared, _shared_lock  # noqa: PLW0603
    _shared_lock = threading.Lock()
    for launcher in [_shared, *_others.values()]:
        if launcher is not None:
            with contextlib.suppress(OSError):
                launcher._ctrl.close()  # noqa: SLF001
    _shared = None
    _others.clear()


atexit.register(shutdown)
os.register_at_fork(after_in_child=_forget_after_fork)
