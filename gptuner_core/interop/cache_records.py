"""Records of a trtexec tuning cache: header, rows, the whole file, and trtexec's eligibility rules.

Reading and writing live in :mod:`gptuner_core.interop.trtexec_cache`, which re-exports these.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gptuner_core.errors import TuningCacheError
from gptuner_core.interop.nlohmann import STYLE_NLOHMANN
from gptuner_core.interop.nlohmann import dumps


HEADER_KEYS: tuple[str, ...] = (
    "tuner_version",
    "accuracy_algorithm",
    "accuracy_parameter",
    "searching_algorithm",
    "command_line",
    "default_build_route",
    "tuning_expr",
    "files",
    "argv",
)
ROW_KEYS: tuple[str, ...] = (
    "iter",
    "build_route",
    "crash",
    "error_message",
    "accuracy_loss",
    "gpu_time",
)
ACCURACY_ALGORITHMS: dict[str, str] = {
    "l0": "L0",
    "l1": "L1",
    "l2": "L2",
    "lInf": "LInf",
    "cos": "Cosine",
}
"""CLI spelling (``--accuracyAlgorithm``) -> the display name trtexec writes in the header."""



# -- records ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class CacheHeader:
    """Line 1 of a tuning cache. ``key_order`` is the order the keys are written in."""

    tuner_version: str = "unknown"
    accuracy_algorithm: str = "L0"
    accuracy_parameter: dict[str, Any] = field(
        default_factory=lambda: {"atol": 1e-05, "rtol": 1e-05, "epsilon": 0.0}
    )
    searching_algorithm: str = "fast"
    command_line: str = ""
    default_build_route: str = ""
    tuning_expr: str = ""
    files: dict[str, Any] = field(default_factory=dict)
    argv: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    key_order: tuple[str, ...] = HEADER_KEYS

    @property
    def epsilon(self) -> float | None:
        """The accuracy threshold, or ``None`` when unset (trtexec writes 0 when unset)."""
        value = self.accuracy_parameter.get("epsilon")
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            return None
        return float(value)

    def to_json(self) -> dict[str, Any]:
        """Ordered dict as written: ``key_order`` first, then extra keys not in it."""
        out: dict[str, Any] = {}
        for key in self.key_order:
            if key in HEADER_KEYS:
                value = getattr(self, key)
                out[key] = list(value) if key == "argv" else value
            elif key in self.extra:
                out[key] = self.extra[key]
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheRow:
    """One completed iteration. ``phase`` is inferred on read (1, or 2 for mixed phase 2)."""

    iter: int
    build_route: str
    crash: bool = False
    error_message: str = ""
    accuracy_loss: dict[str, float] | None = None
    gpu_time: float | None = None
    phase: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def route(self) -> Any:
        """:class:`~gptuner_core.routes.Route` parsed from ``build_route``."""
        from gptuner_core.routes import Route

        return Route.parse(self.build_route)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "iter": self.iter,
            "build_route": self.build_route,
            "crash": self.crash,
            "error_message": self.error_message,
            "accuracy_loss": self.accuracy_loss,
            "gpu_time": self.gpu_time,
        }
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


def accuracy_failed(row: CacheRow, header: CacheHeader) -> bool:
    """True when a non-crashed row failed the accuracy check.

    The row has no such field: trtexec records it as a non-empty ``error_message`` ("child
    exited with status 1") on a non-crashed row, and the losses reach ``epsilon`` (fail means
    ``loss >= epsilon``; a non-finite loss fails too).
    """
    if row.crash:
        return False
    if row.error_message:
        return True
    eps = header.epsilon
    if eps is None or not row.accuracy_loss:
        return False
    return any(not math.isfinite(v) or v >= eps for v in row.accuracy_loss.values())


def _eligible(row: CacheRow, header: CacheHeader) -> bool:
    return (
        not row.crash
        and not row.error_message
        and row.gpu_time is not None
        and math.isfinite(row.gpu_time)
        and not accuracy_failed(row, header)
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TuningCache:
    """A whole cache file: header, rows in file order, warnings from reading it."""

    header: CacheHeader
    rows: tuple[CacheRow, ...] = ()
    warnings: tuple[str, ...] = ()
    style: str = STYLE_NLOHMANN
    source: str = ""

    def eligible_rows(self) -> tuple[CacheRow, ...]:
        """Rows trtexec may promote: not crashed, no error, accuracy passed, finite time."""
        return tuple(r for r in self.rows if _eligible(r, self.header))

    def best(self) -> CacheRow | None:
        """Eligible row with the lowest ``gpu_time`` (the first one on ties), or ``None``."""
        best: CacheRow | None = None
        for row in self.eligible_rows():
            assert row.gpu_time is not None
            if best is None or row.gpu_time < (best.gpu_time or 0.0):
                best = row
        return best

    @property
    def crashed(self) -> tuple[CacheRow, ...]:
        return tuple(r for r in self.rows if r.crash)

    @property
    def accuracy_failures(self) -> tuple[CacheRow, ...]:
        return tuple(r for r in self.rows if accuracy_failed(r, self.header))

    def phase_rows(self, phase: int) -> tuple[CacheRow, ...]:
        return tuple(r for r in self.rows if r.phase == phase)

    def to_string(self) -> str:
        lines = [dumps(self.header.to_json(), self.style)]
        lines += [dumps(r.to_json(), self.style) for r in self.rows]
        return "".join(f"{line}\n" for line in lines)

    def write(self, path: str | Path) -> None:
        """Write the whole file, flushed and fsynced, through a temporary sibling renamed into
        place: a kill leaves the old file (or none), never a torn one."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            write_text(tmp, self.to_string(), append=False)
            os.replace(tmp, path)
        except OSError as exc:
            msg = f"tuning cache '{path}': cannot write file ({exc.strerror or exc})"
            raise TuningCacheError(msg) from None
        finally:
            if tmp.exists():
                tmp.unlink()


def write_text(path: Path, text: str, *, append: bool) -> None:
    """Write (or append) cache text, flushed and fsynced; a failure is a TuningCacheError."""
    try:
        with open(path, "ab" if append else "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        msg = f"tuning cache '{path}': cannot write file ({exc.strerror or exc})"
        raise TuningCacheError(msg) from None
