"""One root for every user-facing error.

User errors subclass :class:`GptunerError` (and a builtin, so generic handlers still catch them).
The CLI and the dashboard print them without a traceback. Our own bugs use ``assert`` or plain
``RuntimeError`` and never subclass the root.

Messages say what was wrong, what was expected and what was found, e.g.
``"knob database 'k.json': field 'tuner_options' must be a list (got str)"``.
"""

from __future__ import annotations


class GptunerError(Exception):
    """Root of every error caused by user input or environment, printed without a traceback."""


class KnobDatabaseError(GptunerError, ValueError):
    """A knob database (all_build_routes JSON) is malformed or unreadable."""


class ExpressionError(GptunerError, ValueError):
    """A tunable expression or fixed route is invalid (trtexec's messages)."""


class InvalidRouteError(ExpressionError):
    """A fixed route names an unknown knob or a value the knob does not allow."""


class TuningCacheError(GptunerError, ValueError):
    """A trtexec tuning cache (JSONL) is malformed."""


class TuningSpaceError(GptunerError, ValueError):
    """A brute-forced tuning space (T4 or Kernel Tuner cache) is malformed or cannot be imported."""


class StoreError(GptunerError, RuntimeError):
    """The study store cannot be opened, read or written."""


class StoreMismatchError(StoreError):
    """A study is continued on a different model, software or device than it was recorded for."""


class BackendUnavailableError(GptunerError, ImportError):
    """A backend cannot run here (library missing, no device, feature disabled)."""


class BackendError(GptunerError, RuntimeError):
    """A backend failed to describe, build or run a model."""


class StrategyError(GptunerError, ValueError):
    """A search strategy name or option is invalid."""


class DatasetError(GptunerError, ValueError):
    """A dataset / reference-input file is missing, malformed or does not match the model."""


class ConfigError(GptunerError, ValueError):
    """A study configuration value is invalid."""


class DeviceBusyError(GptunerError, TimeoutError):
    """A measuring device stayed locked by another study longer than the caller would wait."""


class DeviceWaitEnded(DeviceBusyError):
    """A study stopped waiting for its measuring device: ``--device-wait`` ran out, or a Stop
    was requested while it waited (``stopped``)."""

    def __init__(self, message: str, *, stopped: bool = False) -> None:
        super().__init__(message)
        self.stopped = stopped


class ProfileError(GptunerError, ValueError):
    """A per-layer profile could not be captured, read or compared."""


class BundleError(GptunerError, ValueError):
    """A baseline bundle is missing, incomplete or does not match its manifest (hash mismatch)."""


def os_error_text(exc: OSError) -> str:
    """One line for an OS error of a write or a copy, naming the destination: a copy's error
    names its source first (``filename``) and its destination second (``filename2``), and
    ``shutil.copytree`` raises a list of ``(source, destination, why)``."""
    import errno
    import shutil

    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        failed = exc.args[0]
        src, dst, why = (tuple(failed[0]) + ("", "", ""))[:3]
        more = f" (and {len(failed) - 1} more file(s))" if len(failed) > 1 else ""
        return f"cannot copy '{src}' to '{dst}': {why}{more}"
    full = exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS)
    verb = "cannot write" if full or exc.filename2 else "cannot access"
    where = exc.filename2 or exc.filename
    return f"{verb}{f' {str(where)!r}' if where else ''}: {exc.strerror or exc}"
