"""Follow a plain ``trtexec --tuneBuildRoutes`` run: yield its tuning-cache rows as the file grows."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.backends.tensorrt import trtexec_protocol as proto
from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from gptuner_core.interop.trtexec_cache import CacheHeader
    from gptuner_core.interop.trtexec_cache import CacheRow


def tune_run_argv(argv: list[str], cache_path: Path) -> list[str]:
    """Check a ``trtexec --tuneBuildRoutes`` argv list and pin ``--tuningCacheFile``."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        msg = f"follow_tune_run needs an argv list of strings (never a shell string), got {argv!r:.200}"
        raise ConfigError(msg)
    names = [proto.flag_name(a) for a in argv[1:]]
    if not {"--tuneBuildRoutes", "--tuneBuildRouteFile", "--continue"} & set(names):
        msg = "follow_tune_run: argv has no --tuneBuildRoutes, --tuneBuildRouteFile or --continue (expected a trtexec tuning run)"
        raise ConfigError(msg)
    out = list(argv)
    for i, arg in enumerate(out):
        if proto.flag_name(arg) == "--tuningCacheFile":
            given = arg.partition("=")[2]
            if Path(given).resolve() != Path(cache_path).resolve():
                msg = f"follow_tune_run: argv writes the cache to {given!r} but cache_path is {str(cache_path)!r}"
                raise ConfigError(msg)
            out[i] = f"--tuningCacheFile={cache_path}"
            return out
    out.append(f"--tuningCacheFile={cache_path}")
    return out


def follow_tune_run(
    argv: list[str],
    cache_path: str | Path,
    *,
    poll_s: float = 0.5,
    log_path: str | Path | None = None,
    on_header: Callable[[CacheHeader], None] | None = None,
    stop: Callable[[], bool] | None = None,
) -> Iterator[CacheRow]:
    """Launch a trtexec tuning run and yield each cache row once, as the file grows.

    A fresh run (no ``--continue``) starts from a removed cache file, so stale rows are never
    reported. The generator ends when trtexec has exited and its last row was read; a non-zero
    exit then raises :class:`BackendError` (after every row was yielded). ``stop()`` returning true
    terminates the run early.
    """
    from gptuner_core.errors import TuningCacheError
    from gptuner_core.interop.trtexec_cache import parse_tuning_cache

    cache = Path(cache_path)
    full = tune_run_argv(argv, cache)
    if "--continue" not in [proto.flag_name(a) for a in full]:
        cache.unlink(missing_ok=True)
    log = Path(log_path) if log_path else cache.with_name(cache.name + ".log")
    seen = 0
    header_sent = False
    with open(log, "ab") as log_file:
        proc = subprocess.Popen(full, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            while True:
                finished = proc.poll() is not None
                try:
                    text = cache.read_bytes().decode("utf-8", errors="replace")
                except FileNotFoundError:
                    text = ""
                if text.strip():
                    try:
                        parsed = parse_tuning_cache(text, source=f"'{cache}'")
                    except TuningCacheError:
                        if finished:
                            raise
                        parsed = None  # header still being written
                    if parsed is not None:
                        if not header_sent and on_header is not None:
                            on_header(parsed.header)
                        header_sent = True
                        yield from parsed.rows[seen:]
                        seen = len(parsed.rows)
                if finished:
                    break
                if stop is not None and stop():
                    proc.terminate()
                    proc.wait()
                    return
                time.sleep(poll_s)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    rc = proc.returncode
    if rc:
        how = f"was killed by signal {-rc} ({proto.signal_name(-rc)})" if rc < 0 else f"exited with status {rc}"
        msg = f"trtexec tuning run {how} (log: {log})"
        raise BackendError(msg)
