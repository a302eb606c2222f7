"""On-disk cache of the knob database, one file per TensorRT version and tuner version.

Layout (``GPTUNER_CACHE_DIR`` overrides the root)::

    ~/.cache/gptuner/tensorrt/<trt_version>/<tuner_version>.json   # raw all_build_routes text
    ~/.cache/gptuner/tensorrt/<trt_version>/current                # name of the newest file

The raw string is stored exactly as TensorRT returned it, so the database can be re-parsed by a
newer gptuner; it is read with trtexec's leniency (:mod:`knob_loader`). Creating a builder costs a second or more and needs the GPU, which is why the parent
process reads the cache when it can.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

from gptuner_core.backends.tensorrt.knob_loader import load_report
from gptuner_core.backends.tensorrt.knob_loader import parse_lenient
from gptuner_core.knobs import KnobDatabase


__all__ = ["cache_path", "cache_root", "knob_database", "load_cached", "load_report", "parse_lenient", "store"]


_SAFE = re.compile(r"[^A-Za-z0-9._+-]")


def cache_root() -> Path:
    """``$GPTUNER_CACHE_DIR/tensorrt`` or ``~/.cache/gptuner/tensorrt``."""
    base = os.environ.get("GPTUNER_CACHE_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "gptuner"
    return root / "tensorrt"


def _safe(part: str) -> str:
    cleaned = _SAFE.sub("_", part.strip()) or "unknown"
    return cleaned.lstrip(".") or "unknown"


def cache_path(trt_version: str, tuner_version: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / _safe(trt_version) / f"{_safe(tuner_version)}.json"


def load_cached(trt_version: str, root: Path | None = None) -> KnobDatabase | None:
    """The cached database for this TensorRT version, or ``None`` (never raises on a miss)."""
    folder = (root or cache_root()) / _safe(trt_version)
    pointer = folder / "current"
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    path = folder / name
    if not name or path.parent != folder or not path.is_file():
        return None
    return _read(path)


def _read(path: Path) -> KnobDatabase:
    from gptuner_core.errors import KnobDatabaseError

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"knob database '{path}': cannot read file ({exc})"
        raise KnobDatabaseError(msg) from None
    return parse_lenient(text, source=f"'{path}'")


def store(trt_version: str, routes_json: str, root: Path | None = None) -> Path:
    """Validate and write ``routes_json`` atomically; return the file written."""
    db = parse_lenient(routes_json, source=f"all_build_routes of TensorRT {trt_version}")
    path = cache_path(trt_version, db.tuner_version, root)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(routes_json, encoding="utf-8")
    os.replace(tmp, path)
    pointer_tmp = path.parent / f".current.{os.getpid()}.tmp"
    pointer_tmp.write_text(path.name, encoding="utf-8")
    os.replace(pointer_tmp, path.parent / "current")
    return path


def knob_database(
    trt_version: str,
    fetch: Callable[[], str],
    *,
    root: Path | None = None,
    refresh: bool = False,
) -> KnobDatabase:
    """Cached database for ``trt_version``; on a miss (or ``refresh``) call ``fetch`` and store it."""
    if not refresh:
        cached = load_cached(trt_version, root)
        if cached is not None:
            return cached
    text = fetch()
    path = store(trt_version, text, root)
    return _read(path)
