"""Study fingerprints: what a study's results are valid for.

Results are model-, shape-, software- and hardware-specific (reference §5.3: re-tune after changing
the model, input profile, GPU or TensorRT version). A fingerprint records all of it; continuing a
study whose fingerprint differs is refused with a message naming both sides.
"""

from __future__ import annotations

import hashlib
import platform
import shutil
import socket
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import StoreMismatchError


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.backends import Backend
    from gptuner_core.backends import TensorSpec
    from gptuner_core.knobs import KnobDatabase

#: keys whose change makes earlier results invalid (everything else is informative only).
COMPARED = (
    "model_sha256",
    "measured_shapes",
    "inputs",
    "backend",
    "backend_version",
    "tuner_version",
    "knob_db_sha256",
    "device",
    "driver",
    "runtime",
    "cpu_features",
    "host",
)


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file, or of a directory's files (relative names and bytes, sorted)."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_dir():
        for f in sorted(x for x in p.rglob("*") if x.is_file()):
            h.update(str(f.relative_to(p)).encode())
            h.update(b"\0")
            with f.open("rb") as fh:
                while block := fh.read(chunk):
                    h.update(block)
        return h.hexdigest()
    if not p.exists():
        return ""
    with p.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def model_sha256(files: Sequence[str | Path], chunk: int = 1 << 20) -> str:
    """sha256 of a model made of several files (an ``.onnx`` plus its external data).

    One file hashes exactly as :func:`file_sha256` (so single-file studies keep their
    fingerprint); several files hash each one's name (relative to the first file's folder) and
    bytes, in the order given, so a change in a data file changes the model's hash.
    """
    paths = [Path(f) for f in files]
    if len(paths) == 1:
        return file_sha256(paths[0], chunk)
    base = paths[0].parent
    h = hashlib.sha256()
    for f in paths:
        try:
            name = str(f.relative_to(base))
        except ValueError:
            name = f.name
        h.update(name.encode() + b"\0" + file_sha256(f, chunk).encode() + b"\0")
    return h.hexdigest()


def copy_model(files: Sequence[str | Path], dest_dir: str | Path) -> Path:
    """Copy a model and its data files into ``dest_dir``, keeping their relative layout (ONNX
    external data locations are relative to the model file); returns the copied model's path."""
    paths = [Path(f) for f in files]
    if not paths:
        msg = "copy_model needs at least the model file"
        raise ValueError(msg)
    dest = Path(dest_dir)
    base = paths[0].parent
    for f in paths:
        try:
            rel = f.relative_to(base)
        except ValueError:
            rel = Path(f.name)
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, target)
    return dest / paths[0].name


def model_files(backend: Backend, model: str | Path) -> list[Path]:
    """The files a model is made of, as its backend says (just the model when it has no say)."""
    lister = getattr(backend, "model_files", None)
    p = Path(model)
    if callable(lister) and p.is_file():
        return [Path(f) for f in lister(p)]
    return [p]


def compute(
    *,
    model: str,
    backend_name: str,
    backend: Backend,
    db: KnobDatabase,
    specs: list[TensorSpec],
    measured_shapes: Sequence[str] = (),
) -> dict[str, Any]:
    """What a study's numbers depend on; ``measured_shapes`` (the ``--measure-shapes``
    profiles, canonical text) only when the study measures at given shapes."""
    from gptuner_core.shapes import parse_shapes
    from gptuner_core.shapes import shape_label

    env = {k: str(v) for k, v in backend.environment().items()}
    model_path = Path(model)
    shapes = {"measured_shapes": [shape_label(parse_shapes(t, option="--measure-shapes"))
                                  for t in measured_shapes]} if measured_shapes else {}
    return {
        "model_sha256": (
            model_sha256(model_files(backend, model_path)) if model_path.exists() else model
        ),
        "inputs": [f"{s.name}:{s.dtype}:{list(s.shape)}" for s in specs],
        "backend": backend_name,
        "backend_version": env.pop("backend_version", ""),
        "tuner_version": db.tuner_version,
        "knob_db_sha256": db.sha256,
        "device": env.pop("device", ""),
        "driver": env.pop("driver", ""),
        "runtime": env.pop("runtime", ""),
        "cpu_features": env.pop("cpu_features", ""),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "extra": env,
        **shapes,
    }


def differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``(key, recorded, current)`` for every compared key that differs."""
    return [
        (k, recorded.get(k), current.get(k))
        for k in COMPARED
        if recorded.get(k) != current.get(k)
    ]


def check(study_dir: str | Path, recorded: dict[str, Any], current: dict[str, Any]) -> None:
    """Raise StoreMismatchError naming both sides of every difference."""
    diffs = differences(recorded, current)
    if not diffs:
        return
    parts = "; ".join(f"{k} (study: {_short(a)}, now: {_short(b)})" for k, a, b in diffs)
    msg = (
        f"cannot continue study '{study_dir}': it was recorded for a different setup: {parts}. "
        "Results would not be comparable; start a new study, or pass --force to continue anyway "
        "(the override is recorded in the study)"
    )
    raise StoreMismatchError(msg)


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:16] + "…" + text[-16:]
