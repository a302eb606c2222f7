"""What runs inside the launcher process (see ``launcher``): preload, fork on request, reap.

Rules, checked before **every** fork (a refused fork makes the caller use spawn):

* the launcher has exactly one thread (``/proc/self/task``): forking a threaded process can
  copy a lock held by another thread. numpy's OpenBLAS starts its pool at import, so the launcher
  runs with ``OPENBLAS_NUM_THREADS=1`` and each child sets the pool back to what a fresh
  interpreter with the caller's environment would have chosen. ``onnxruntime`` starts a thread
  when imported (seen with 1.32), so it is not preloaded;
* none of :data:`FORBIDDEN` is imported: the launcher never initialises CUDA, nor NVML while it
  preloads (:func:`nvml_elsewhere`: PyTorch's fork-safe availability check would leave NVML's
  thread in it).

A ``torch`` launcher (the fork server of CUDA backends: torch on a GPU) preloads torch, Inductor
and the torch backend (:data:`TORCH_PRELOAD`), computes the keys every compile hashes first
(``backends.torch_inductor.prime``) and, on request, the user's model module (imported,
its factory not called). It may hold torch but never CUDA: before every fork
``torch.cuda.is_initialized()`` must be false; each child initialises CUDA itself. The preload stops at the first module after which
the launcher is unsafe (a thread, CUDA) and says which (``unsafe_after``): the caller starts a
new launcher with the modules before it (``launcher.shared``). A model module that initialises
CUDA or starts a thread when imported makes the launcher refuse every fork from then on (the
caller spawns, with the reason logged).

A child applies the caller's environment, working directory and ``sys.path`` sent with its
request, reseeds numpy's global generator, sets ``PR_SET_PDEATHSIG`` towards the launcher (in the
entry, ``isolation._child_main``) and runs the entry. The launcher exits, killing its children,
when its control socket reports EOF (the caller died, even by SIGKILL: the kernel closes its end)
or when it is re-parented.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import select
import signal
import socket
import sys
import traceback
from collections.abc import Mapping
from typing import Any

from gptuner_core.engine.process.nvml import nvml_elsewhere
from gptuner_core.engine.process.startup_trace import step


#: imported once by the launcher: what a CPU candidate's child needs before its first phase
PRELOAD = (
    "numpy", "onnx", "gptuner_core", "gptuner_core.engine.process.child", "gptuner_core.measurement",
    "gptuner_core.routes", "gptuner_core.backends.onnxruntime", "gptuner_core.testing.faulty_backend",
)
#: imported once by a ``torch`` launcher (the fork server of torch on a GPU): never CUDA itself,
#: nor onnx, which no torch candidate uses (0.3-0.8 s before the study's first fork)
TORCH_PRELOAD = (
    PRELOAD[0], "torch", "torch._dynamo", "torch._inductor.compile_fx", "gptuner_core",
    "gptuner_core.engine.process.child", "gptuner_core.measurement", "gptuner_core.routes",
    "gptuner_core.backends.torch_inductor.backend", "gptuner_core.backends.torch_inductor.build",
    "gptuner_core.backends.torch_inductor.reload", "gptuner_core.backends.torch_inductor.runner",
    "gptuner_core.backends.torch_inductor.prime:prime_caches",  # keys each compile hashes first
)
#: never in the launcher: they initialise CUDA or start threads when imported
FORBIDDEN = ("torch", "tensorrt", "cuda", "pycuda", "cupy", "jax", "tensorflow", "onnxruntime")
#: what a launcher of each kind preloads and may not hold
KINDS = {
    "cpu": (PRELOAD, FORBIDDEN),
    "torch": (TORCH_PRELOAD, tuple(n for n in FORBIDDEN if n != "torch")),
}
MAX_MSG = 1 << 20


# -- OpenBLAS's thread pool ---------------------------------------------------------------------

_BLAS_PREFIXES = ("openblas", "scipy_openblas")


def _openblas(suffix: str) -> list[Any]:
    """``<prefix>_<suffix>`` of every OpenBLAS this process has loaded (numpy's, scipy's)."""
    paths = set()
    with contextlib.suppress(OSError), open("/proc/self/maps", encoding="utf-8") as fh:
        for line in fh:
            parts = line.split(None, 5)
            if len(parts) == 6 and "openblas" in os.path.basename(parts[5]).lower():
                paths.add(parts[5].strip())
    found = []
    for path in sorted(paths):
        lib = ctypes.CDLL(path)
        for prefix in _BLAS_PREFIXES:
            fn = getattr(lib, f"{prefix}_{suffix}", None) or getattr(lib, f"{prefix}_{suffix}64_", None)
            if fn is not None:
                found.append(fn)
                break
    return found


def blas_threads() -> list[int]:
    """The pool size of every loaded OpenBLAS (for tests and diagnostics)."""
    return [int(fn()) for fn in _openblas("get_num_threads")]


def fresh_blas_threads(env: Mapping[str, str]) -> int:
    """The pool size OpenBLAS picks when loaded by a fresh interpreter with ``env``: the first
    positive of OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS, OMP_NUM_THREADS, capped by the usable CPUs."""
    cpus = len(os.sched_getaffinity(0))
    for var in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        digits = ""
        for ch in env.get(var, "").strip():
            if not ch.isdigit():
                break
            digits += ch
        if digits and int(digits) > 0:
            return min(int(digits), cpus)
    return cpus


def restore_blas_threads(env: Mapping[str, str]) -> None:
    """Give a forked child the OpenBLAS pool a spawned one would have (the launcher runs with 1)."""
    n = fresh_blas_threads(env)
    if n != 1:
        for fn in _openblas("set_num_threads"):
            fn(ctypes.c_int(n))


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _settle_threads(target: int, timeout_s: float = 2.0) -> None:
    """Wait (briefly) for threads that are ending to be gone: a joined Python thread's native
    thread may outlive the join by a moment (the preload's watcher, under load)."""
    import time

    deadline = time.monotonic() + timeout_s
    while _threads() > target and time.monotonic() < deadline:
        time.sleep(0.01)


# -- the launcher process ----------------------------------------------------------------------


def cuda_reason() -> str:
    """Why CUDA is initialised in this process ("" when it is not): torch's own flag. (The CUDA
    driver library may be mapped: importing a CUDA build of torch loads it without ``cuInit``,
    and children forked then initialise CUDA themselves; seen on the lent H200.)"""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "torch.cuda.is_initialized() is true in the launcher"
    return ""


def unsafe_reason(kind: str = "cpu", *, own_threads: int = 0) -> str:
    """Why forking this process now would not give a clean child ("" when it would);
    ``own_threads``: threads of the launcher's own that will be gone before the first fork."""
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError as exc:
        return f"cannot count the launcher's threads ({exc})"
    if threads - own_threads != 1:
        return f"the launcher has {threads - own_threads} threads (a fork needs exactly 1)"
    loaded = [name for name in KINDS[kind][1] if name in sys.modules]
    if loaded:
        return f"the launcher has imported {', '.join(loaded)}"
    return cuda_reason() if kind == "torch" else ""


def _warm(models: list[str], warmed: dict[str, str]) -> None:
    """Import each torch model module once (its factory is not called): children find it done."""
    for text in models:
        if text in warmed:
            continue
        warmed[text] = ""
        try:
            from gptuner_core.backends.torch_inductor.model import warm_import

            with step("fork server", f"import {text.rpartition(':')[0] or text}"):
                warm_import(text)
        except Exception as exc:  # noqa: BLE001 - the child imports it and reports the error
            warmed[text] = f"{type(exc).__name__}: {exc}"


def _warm_request(data: bytes, kind: str, warmed: dict[str, str]) -> None:
    if kind != "torch":
        return
    with contextlib.suppress(ValueError, AttributeError):
        models = list(json.loads(data).get("warm") or ())
        with nvml_elsewhere() as patch_nvml:
            patch_nvml()
            _warm(models, warmed)


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        sock.send(json.dumps(message).encode())


def _preload(names: list[str], parent_pid: int, kind: str) -> str:
    """Import ``names`` (``module:function``: import, then call it), stopping at the first that
    makes a fork unsafe (returned: the caller retries with the names before it; "" when all are
    safe). A caller killed meanwhile
    (imports take seconds on a busy machine) ends the launcher at once, not after them: a
    watcher thread, joined before the first fork (a fork needs exactly one thread)."""
    import threading

    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.1):
            if os.getppid() != parent_pid:
                os._exit(0)

    watcher = threading.Thread(target=watch, name="gptuner-launcher-watch", daemon=True)
    watcher.start()
    try:
        with nvml_elsewhere() as patch_nvml:
            for name in names:  # a module, or "module:function" to import and call
                module, _, call = name.partition(":")
                with contextlib.suppress(Exception), step("fork server", name):  # a child imports
                    loaded = importlib.import_module(module)  # what the launcher could not
                    if call:
                        getattr(loaded, call)()
                if kind == "torch":
                    patch_nvml()  # from the moment torch.cuda exists
                if unsafe_reason(kind, own_threads=1):
                    return name
        return ""
    finally:
        done.set()
        watcher.join()
        _settle_threads(1)  # its native thread may outlive the join by a moment


def serve(config: dict[str, Any]) -> None:
    """Main loop of the launcher process (started by :class:`Launcher`)."""
    sigint = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the candidate, not the launcher
    ctrl = socket.socket(fileno=int(config["fd"]))
    kind = str(config.get("kind", "cpu"))
    warmed: dict[str, str] = {}
    unsafe_after = _preload(config["preload"], int(config["parent_pid"]), kind)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, socket.socket] = {}  # pid -> its job socket, until reaped
    listening: dict[socket.socket, int] = {}  # job sockets still open on the caller's side
    _send(ctrl, {"ready": True, "pid": os.getpid(), "unsafe": unsafe_reason(kind), "unsafe_after": unsafe_after})
    try:
        while True:
            ready, _, _ = select.select([ctrl, wake_r, *listening], [], [], 1.0)
            if os.getppid() != config["parent_pid"]:
                return
            with contextlib.suppress(OSError):
                os.read(wake_r, 4096)
            _reap(children, listening)
            for sock in ready:
                if sock is ctrl:
                    data, fds, _, _ = socket.recv_fds(ctrl, MAX_MSG, 1)
                    if not data:
                        return  # the caller closed its end or died
                    if not fds:  # a warm request (``Launcher.warm``): imports, no fork
                        _warm_request(data, kind, warmed)
                    else:
                        job = socket.socket(fileno=fds[0])
                        try:
                            req = json.loads(data)
                        except ValueError as exc:
                            _send(job, {"refused": f"unreadable request ({exc})"})
                            job.close()
                            continue
                        if kind == "torch":
                            with nvml_elsewhere() as patch_nvml:
                                patch_nvml()
                                _warm(list(req.get("warm") or ()), warmed)
                        _fork(req, job, children, listening, [ctrl.fileno(), wake_r, wake_w], sigint, kind)
                elif sock in listening:
                    try:
                        data = sock.recv(64)
                    except OSError:
                        data = b""
                    pid = listening[sock]
                    if data in (b"", b"kill") and pid in children:
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)
                    if not data:
                        del listening[sock]
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _reap(children: dict[int, socket.socket], listening: dict[socket.socket, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock = children.pop(pid, None)
        if sock is not None:
            _send(sock, {"exit": os.waitstatus_to_exitcode(status)})
            listening.pop(sock, None)
            sock.close()


def _fork(
    req: dict[str, Any], sock: socket.socket, children: dict[int, socket.socket],
    listening: dict[socket.socket, int], own_fds: list[int], sigint: Any, kind: str = "cpu",
) -> None:
    reason = unsafe_reason(kind)
    if reason:
        _send(sock, {"refused": reason})
        sock.close()
        return
    launcher_pid = os.getpid()
    pid = os.fork()
    if pid == 0:
        inherited = [*own_fds, sock.fileno(), *(s.fileno() for s in children.values())]
        _in_child(req, inherited, sigint, launcher_pid, kind)
    children[pid] = sock
    listening[sock] = pid
    _send(sock, {"pid": pid})


def _refresh_torch(env: Mapping[str, str]) -> None:
    """Settings torch read from the launcher's environment at import, read again from the
    caller's: Inductor's compile workers (``TORCHINDUCTOR_COMPILE_THREADS``)."""
    config = sys.modules.get("torch._inductor.config")
    if config is not None and hasattr(config, "decide_compile_threads"):
        with contextlib.suppress(Exception):
            config.compile_threads = config.decide_compile_threads()


def _in_child(req: dict[str, Any], inherited: list[int], sigint: Any, launcher_pid: int,
              kind: str = "cpu") -> None:
    """Become the caller's fresh child: its environment, directory and path, then the entry."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL if sigint is None else sigint)
        for fd in inherited:
            with contextlib.suppress(OSError):
                os.close(fd)
        os.environ.clear()
        os.environ.update(req["env"])
        restore_blas_threads(os.environ)
        if kind == "torch":
            _refresh_torch(os.environ)
        os.chdir(req["cwd"])
        sys.path[:] = req["sys_path"]
        if "numpy.random" in sys.modules:  # a fresh interpreter seeds it from the OS
            sys.modules["numpy.random"].seed()
        module, _, fn = req["entry"].partition(":")
        getattr(importlib.import_module(module), fn)(*req["args"], launcher_pid)
        code = 0
    except BaseException:  # noqa: BLE001 - written where the candidate's log goes
        with contextlib.suppress(OSError), open(req.get("log") or os.devnull, "a") as fh:
            traceback.print_exc(file=fh)
    finally:
        os._exit(code)
