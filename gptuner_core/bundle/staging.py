"""A bundle appears whole or not at all: it is written into a temporary sibling folder
(``.NAME.partial-PID``) and renamed into place. A partial bundle a kill left behind (the sibling,
or an older gptuner's half-written folder with no ``manifest.json``) is recognised and cleaned by
the next write, so ``bundle`` (or ``tune --continue --output``) run again simply finishes it."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from gptuner_core.bundle.manifest import MANIFEST
from gptuner_core.errors import BundleError


#: what a bundle writer puts in a bundle folder (a folder holding only these and no manifest is
#: a bundle a kill cut short)
BUNDLE_NAMES = frozenset({
    "artifact", "info", "model", "samples.json", "fingerprint.json", "rebuild.sh", "timing.cache",
    "study.json", "golden.npz", "inputs.npz", "labels.npy", "reference.json", "calibration.npz",
})
TEMP = re.compile(r"^\..+\.tmp-\d+$")


def is_partial_bundle(folder: Path) -> bool:
    """A folder a bundle writer started and never finished: no manifest, only bundle entries."""
    if not folder.is_dir() or folder.is_symlink() or (folder / MANIFEST).exists():
        return False
    names = [p.name for p in folder.iterdir()]
    return bool(names) and all(n in BUNDLE_NAMES or TEMP.match(n) for n in names)


def discard_leftovers(out: Path) -> None:
    """Remove the staging siblings of ``out`` left by a killed writer (never a live one's)."""
    from gptuner_core.engine.files.workspace import discard_stale_siblings

    discard_stale_siblings(out)


def prepare(out: Path, *, replace: bool = False) -> Path:
    """Check ``out`` may receive a bundle; return the empty staging folder to write it into.

    ``out`` may be absent, empty, a partial bundle (cleaned) or, with ``replace``, a bundle."""
    if out.parent.exists():
        discard_leftovers(out)
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        msg = f"-o '{out}' already exists and is not a folder (expected a new or empty folder)"
        raise BundleError(msg)
    if out.is_dir() and any(out.iterdir()) and not is_partial_bundle(out):
        if not (replace and (out / MANIFEST).is_file()):
            msg = f"-o '{out}' already exists and is not an empty folder (expected a new or empty folder)"
            raise BundleError(msg)
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    return staging


def publish(staging: Path, out: Path) -> None:
    """Rename the finished ``staging`` folder to ``out`` (replacing an empty, partial or, when
    asked, older bundle there)."""
    from gptuner_core.engine.files.workspace import fsync_dir

    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        shutil.rmtree(old, ignore_errors=True)
        os.rename(out, old)
    os.rename(staging, out)
    fsync_dir(out.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def abandon(staging: Path) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(staging)
