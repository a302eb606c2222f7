"""One device, one measuring study: a cross-process lock per measuring device.

Two studies measuring on one device at once corrupt each other's numbers (the same default route
read 0.540 ms in one study and 0.181 ms in the other). Every measurement therefore holds the lock
of each device it measures on:

* the CPU: one lock per core of the process's CPU set (``os.sched_getaffinity``), so studies
  pinned to disjoint cores may run side by side while overlapping ones wait;
* a GPU: one lock per device UUID (NVML; the index when NVML is missing), so the same GPU seen
  through different ``CUDA_VISIBLE_DEVICES`` numbering is still one lock.

Locks are ``fcntl.flock`` locks on files in a per-user runtime directory: ``$GPTUNER_LOCK_DIR``,
else ``$XDG_RUNTIME_DIR/gptuner/locks``, else ``~/.cache/gptuner/locks``. The kernel drops a flock
when its holder exits, however it dies, so a stale lock file never blocks: only a live holder does.
(``flock`` rather than ``lockf``: POSIX record locks belong to the process, so any ``close`` of the
file in the holder's process, e.g. a status read, would silently drop them.)

The holder writes a :class:`LockHolder` (pid, study, since, host) into the file, so others can
say "waiting for device cpu0 (held by study S, pid P)". All devices of a study are taken
all-or-nothing, retried by polling, so two studies can never deadlock on each other's halves.

Example::

    from gptuner_core.device_lock import DeviceLock, measuring_devices

    lock = DeviceLock(measuring_devices("cpu"), study="studies/resnet")
    with lock.held(timeout=None, on_wait=lambda w: progress(w.message)):
        ...  # measure
    busy = lock.holders()  # {device: LockHolder} of the devices held by others right now
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import socket
import time
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gptuner_core.errors import ConfigError
from gptuner_core.errors import DeviceBusyError


ENV_DIR = "GPTUNER_LOCK_DIR"


def lock_dir() -> Path:
    """The per-user directory of the lock files (created, mode 0700)."""
    if os.environ.get(ENV_DIR):
        path = Path(os.environ[ENV_DIR])
    elif os.environ.get("XDG_RUNTIME_DIR") and os.access(os.environ["XDG_RUNTIME_DIR"], os.W_OK):
        path = Path(os.environ["XDG_RUNTIME_DIR"]) / "gptuner" / "locks"
    else:
        path = Path.home() / ".cache" / "gptuner" / "locks"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def cpu_devices() -> tuple[str, ...]:
    """``cpu<N>`` for each core this process may run on."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return tuple(f"cpu{c}" for c in cores)


def gpu_device(index: int) -> str:
    """``gpu-<UUID>`` of CUDA device ``index`` (NVML), else ``gpu<index>``."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            uuid = pynvml.nvmlDeviceGetUUID(pynvml.nvmlDeviceGetHandleByIndex(index))
        finally:
            pynvml.nvmlShutdown()
        return f"gpu-{uuid.decode() if isinstance(uuid, bytes) else uuid}"
    except Exception:  # NVML missing or failing: the index is the best identity left
        return f"gpu{index}"


def measuring_devices(device: str) -> tuple[str, ...]:
    """The lock names for a backend's measuring device: ``"cpu"`` or ``"cuda[:N]"``."""
    if device == "cpu":
        return cpu_devices()
    if device.startswith("cuda"):
        index = int(device.partition(":")[2] or 0)
        if os.environ.get("CUDA_VISIBLE_DEVICES"):
            visible = [v.strip() for v in os.environ["CUDA_VISIBLE_DEVICES"].split(",")]
            if index < len(visible) and visible[index].isdigit():
                index = int(visible[index])
        return (gpu_device(index),)
    msg = f"measuring device must be 'cpu' or 'cuda[:N]' (got {device!r})"
    raise ConfigError(msg)


def _file(device: str, directory: Path) -> Path:
    if not device or not re.fullmatch(r"[A-Za-z0-9._-]+", device):
        msg = f"device lock names are letters, digits, '.', '_' or '-' (got {device!r})"
        raise ConfigError(msg)
    return directory / f"{device}.lock"


@dataclass(frozen=True, slots=True, kw_only=True)
class LockHolder:
    """Who holds a device: process id, study, since when (epoch seconds), host."""

    device: str
    pid: int
    study: str
    since: float
    host: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "pid": self.pid, "study": self.study,
                "since": self.since, "host": self.host}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LockHolder:
        return cls(device=str(data["device"]), pid=int(data["pid"]), study=str(data["study"]),
                   since=float(data["since"]), host=str(data.get("host", "")))


@dataclass(frozen=True, slots=True, kw_only=True)
class Waiting:
    """Passed to ``on_wait`` while a study waits: the busy device and who holds it."""

    device: str
    holder: LockHolder | None
    waited_s: float

    @property
    def message(self) -> str:
        if self.holder is None:
            return f"waiting for device {self.device}, held by another process"
        since = time.strftime("%H:%M", time.localtime(self.holder.since))
        return (f"waiting for device {self.device}, held by study {self.holder.study} since {since} "
                f"(pid {self.holder.pid})")


def read_holder(device: str, directory: Path | None = None) -> LockHolder | None:
    """The live holder of ``device``, or ``None`` when it is free (a dead holder's file is free)."""
    path = _file(device, directory or lock_dir())
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            try:
                return LockHolder.from_json(json.loads(text))
            except (ValueError, KeyError, TypeError):  # taken a moment ago, not yet written
                return LockHolder(device=device, pid=0, study="?", since=time.time())
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def busy(device: str, directory: Path | None = None) -> tuple[LockHolder, ...]:
    """Live holders of a backend's measuring device (``"cpu"``, ``"cuda:N"``): for a page to warn
    "device busy: study S (pid P) is measuring" before launching a study onto it."""
    found = (read_holder(d, directory) for d in measuring_devices(device))
    return tuple(h for h in found if h is not None)


class DeviceLock:
    """Exclusive hold of a set of devices for one study (see the module docstring).

    Args:
        devices: lock names (:func:`measuring_devices`).
        study: the study shown to waiting processes (its directory, usually).
        directory: lock directory (default :func:`lock_dir`).
    """

    def __init__(self, devices: Sequence[str], *, study: str, directory: Path | None = None) -> None:
        if not devices:
            msg = "a device lock needs at least one device (got none)"
            raise ConfigError(msg)
        self.devices = tuple(sorted(set(devices)))
        self.study = str(study)
        self.directory = Path(directory) if directory is not None else lock_dir()
        self._fds: dict[str, int] = {}
        for d in self.devices:
            _file(d, self.directory)

    @property
    def locked(self) -> bool:
        return bool(self._fds)

    def holders(self) -> dict[str, LockHolder]:
        """Live holders of this lock's devices other than this object itself."""
        out = {}
        for d in self.devices:
            if d in self._fds:
                continue
            h = read_holder(d, self.directory)
            if h is not None:
                out[d] = h
        return out

    def _try_all(self) -> str | None:
        """Take every device or none; the first busy device's name, or ``None`` when taken."""
        taken: dict[str, int] = {}
        for d in self.devices:
            fd = os.open(_file(d, self.directory), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                for other in taken.values():
                    fcntl.flock(other, fcntl.LOCK_UN)
                    os.close(other)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    return d
                raise
            taken[d] = fd
        now = time.time()
        for d, fd in taken.items():
            record = LockHolder(device=d, pid=os.getpid(), study=self.study, since=now,
                                host=socket.gethostname())
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record.to_json()).encode(), 0)
        self._fds = taken
        return None

    def acquire(
        self,
        timeout: float | None = None,
        *,
        on_wait: Callable[[Waiting], None] | None = None,
        poll_s: float = 0.25,
        should_stop: Callable[[], bool] | None = None,
    ) -> bool:
        """Take every device, waiting up to ``timeout`` s (``None``: for ever); True when held.

        ``on_wait`` is called when the wait starts and whenever the busy device or its holder
        changes (not on every poll); ``should_stop`` is asked at every poll, and a True ends the
        wait at once (False returned: a Stop never waits for another study's candidate).
        """
        if self._fds:
            return True
        start = time.monotonic()
        last: tuple[str, int | None] | None = None
        while True:
            busy = self._try_all()
            if busy is None:
                return True
            waited = time.monotonic() - start
            if (timeout is not None and waited >= timeout) or (should_stop is not None and should_stop()):
                return False
            if on_wait is not None:
                holder = read_holder(busy, self.directory)
                key = (busy, holder.pid if holder else None)
                if key != last:
                    on_wait(Waiting(device=busy, holder=holder, waited_s=waited))
                    last = key
            time.sleep(poll_s if timeout is None else min(poll_s, max(0.0, timeout - waited)))

    def release(self) -> None:
        """Give every device back (the holder record is cleared first)."""
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
        self._fds = {}

    @contextlib.contextmanager
    def held(
        self, timeout: float | None = None, *, on_wait: Callable[[Waiting], None] | None = None
    ) -> Iterator[DeviceLock]:
        """Context manager: hold the devices inside; :class:`DeviceBusyError` after ``timeout``."""
        if not self.acquire(timeout, on_wait=on_wait):
            busy = self.holders()
            who = "; ".join(Waiting(device=d, holder=h, waited_s=0).message for d, h in busy.items())
            msg = f"devices {list(self.devices)} still busy after {timeout:g} s ({who or 'freed just now'})"
            raise DeviceBusyError(msg)
        try:
            yield self
        finally:
            self.release()

    def __enter__(self) -> DeviceLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
