"""Timing cache shared across a study's candidates, or isolated per candidate.

Shared mode: every candidate starts from the study's cache file (read under the lock) and, after a
successful build, merges its own entries back: under the exclusive lock the *current* file is re-read,
our cache is combined into it (``ITimingCache.combine``; conflicting entries are skipped) and the
result replaces the file atomically. Concurrent candidates therefore never lose each other's
entries, and a crash mid-write leaves the previous file intact.

The lock is trtexec's own protocol (``shared/utils/fileLock.cpp``): ``<cache>.lock`` opened with
``fopen(..., "wb+")`` and locked with ``lockf(fd, F_LOCK, 0)``, a POSIX record lock. ``flock`` locks
are a separate kind on Linux, so a trtexec run and gptuner could both have held "the" lock at once;
with :func:`fcntl.lockf` they exclude each other. POSIX locks belong to the process, so within one
process the lock does not serialize threads: each candidate runs in its own process.

Isolated mode: the candidate starts from an empty cache and writes it beside its engine only.
No source states how build routes and the timing cache interact (reference §5.3 [?]); isolated is
the clean A/B choice, shared the faster one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gptuner_core.errors import BackendError


MODES = ("shared", "isolated")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Exclusive ``lockf`` lock on ``<path>.lock`` for the block, compatible with trtexec's."""
    lock_path = path.with_name(path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)  # fopen "wb+"
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_bytes(path: Path | None) -> bytes:
    """The cache file's bytes, ``b""`` when there is none yet."""
    if path is None:
        return b""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""
    except OSError as exc:
        msg = f"timing cache '{path}': cannot read ({exc.strerror or exc})"
        raise BackendError(msg) from None


def read_locked(path: Path | None) -> bytes:
    """:func:`read_bytes` under the cache lock, so a half-written file is never read."""
    if path is None:
        return b""
    with locked(path):
        return read_bytes(path)


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def merge_into_file(path: Path, serialize_merged: Any) -> bytes:
    """Under the lock: ``serialize_merged(current_bytes) -> bytes``, then replace the file.

    ``serialize_merged`` receives what is on disk *now* (another candidate may have merged since we
    started) and returns the combined serialized cache.
    """
    with locked(path):
        current = read_bytes(path)
        merged = bytes(serialize_merged(current))
        if not merged:
            msg = f"timing cache '{path}': merged cache serialized to 0 bytes; file left unchanged"
            raise BackendError(msg)
        write_atomic(path, merged)
        return merged


def attach(trt: Any, config: Any, start: bytes) -> Any:
    """Create a timing cache from ``start`` and set it on ``config``; return the cache."""
    cache = config.create_timing_cache(start)
    if cache is None:
        msg = "TensorRT could not create a timing cache from the study's cache file"
        raise BackendError(msg)
    if config.set_timing_cache(cache, True) is False:
        msg = "IBuilderConfig.set_timing_cache failed (cache from another TensorRT/device?)"
        raise BackendError(msg)
    return cache


def merge_back(trt: Any, config: Any, path: Path) -> None:
    """Combine the config's timing cache into the shared file (see module docstring)."""
    own = config.get_timing_cache()
    if own is None:
        return

    def combine(current: bytes) -> bytes:
        base = config.create_timing_cache(current)
        if base is None or not base.combine(own, True):
            # The file is unreadable for this TensorRT: start over from our own entries.
            return bytes(memoryview(own.serialize()))
        return bytes(memoryview(base.serialize()))

    merge_into_file(path, combine)
