"""Every path of a study folder, the stop request, and atomic writes.

Layout::

    STUDY/study.json          the study configuration (``tune --config`` reads it; written first)
    STUDY/study.sqlite        the store (appears only once the study is initialised, atomically)
    STUDY/inputs.npz          measurement + accuracy inputs    STUDY/calibration.npz
    STUDY/labels.npy          labels for task metrics          STUDY/golden.npz, reference.json
    STUDY/stop                a stop request                   STUDY/tuner.log, tuner.pid
    STUDY/candidates/NNNNN/   one folder per candidate (job, phase, result, log, outputs, artifact;
                              build outputs pruned per --keep-artifacts, see ``engine.files.artifacts``)
    STUDY/baselines/NNNNN/    drift re-measurements of the default route
    STUDY/revalidation/       interleaved re-validation rounds

Creation is atomic: the store is initialised in ``STUDY/.creating/`` and renamed into place, so
a kill at any instant leaves either no study (a folder ``tune`` accepts again) or a complete one.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from gptuner_core.errors import StoreError


STORE = "study.sqlite"
CONFIG = "study.json"
STOP = "stop"
CANDIDATES = "candidates"
CREATING = ".creating"


class StudyWorkspace:
    """The paths of one study folder; nothing else builds a path into a study."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).absolute()

    # -- paths -----------------------------------------------------------------------------
    @property
    def store(self) -> Path:
        return self.root / STORE

    @property
    def config(self) -> Path:
        return self.root / CONFIG

    @property
    def stop_file(self) -> Path:
        return self.root / STOP

    @property
    def inputs(self) -> Path:
        return self.root / "inputs.npz"

    @property
    def calibration(self) -> Path:
        return self.root / "calibration.npz"

    @property
    def labels(self) -> Path:
        return self.root / "labels.npy"

    @property
    def golden(self) -> Path:
        return self.root / "golden.npz"

    @property
    def reference(self) -> Path:
        return self.root / "reference.json"

    @property
    def log(self) -> Path:
        return self.root / "tuner.log"

    @property
    def pid_file(self) -> Path:
        return self.root / "tuner.pid"

    @property
    def creating(self) -> Path:
        """This process's staging folder for a new study's store."""
        return self.root / f"{CREATING}-{os.getpid()}"

    def candidate_dir(self, number: int) -> Path:
        return self.root / CANDIDATES / f"{number:05d}"

    def baseline_dir(self, after: int) -> Path:
        return self.root / "baselines" / f"{after:05d}"

    def revalidation_dir(self, round_index: int, number: int) -> Path:
        return self.root / "revalidation" / f"r{round_index}_{number:05d}"

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """True when ``path`` lies inside the study folder (symlinks resolved)."""
        try:
            Path(path).resolve().relative_to(self.root.resolve())
        except (ValueError, OSError):
            return False
        return True

    # -- state -----------------------------------------------------------------------------
    def has_study(self) -> bool:
        """An initialised study (the store is renamed into place only when complete; a store
        left uninitialised by an older gptuner killed during creation is no study)."""
        return self.store.is_file() and not self._uninitialised_store()

    def _uninitialised_store(self) -> bool:
        from gptuner_core.storage import open_store

        try:
            with open_store(self.root, readonly=True) as store:
                return not store.config()
        except StoreError as exc:
            return "not initialised yet" in str(exc)  # anything else is kept and reported

    def check_usable(self) -> None:
        """Refuse, before anything is written, a study path that cannot hold a study."""
        root = self.root
        for parent in [root, *root.parents]:
            if parent.exists():
                if not parent.is_dir():
                    what = "is a file" if parent == root else f"lies under the file '{parent}'"
                    msg = f"study folder '{root}' {what} (expected a folder, or a path to create one)"
                    raise StoreError(msg)
                if not os.access(parent, os.W_OK | os.X_OK):
                    msg = f"study folder '{root}': '{parent}' is not writable (permission denied)"
                    raise StoreError(msg)
                break
        if self.store.exists() and not self.store.is_file():  # its settings would be rewritten
            msg = (f"study folder '{root}': '{self.store}' is a folder (expected the study's SQLite "
                   "file; move it away)")
            raise StoreError(msg)
        if str(root).startswith(("/proc/", "/sys/")) or str(root) in ("/proc", "/sys"):
            msg = f"study folder '{root}' is on a kernel filesystem (expected a normal folder)"
            raise StoreError(msg)

    def prepare_creation(self) -> Path:
        """A clean staging folder for the store of a new study (removes one left by a kill)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.discard_creation_leftovers()
        self.creating.mkdir()
        return self.creating

    def commit_creation(self) -> None:
        """Move the initialised store into place: from here on the study exists."""
        staged = self.creating / STORE
        for suffix in ("-wal", "-shm"):
            if Path(str(staged) + suffix).exists():  # the store must be closed (checkpointed)
                msg = f"internal: staged store {staged} still has its {suffix} file"
                raise RuntimeError(msg)
        try:
            os.link(staged, self.store)  # never replaces a study another tuner just created
        except FileExistsError:
            shutil.rmtree(self.creating, ignore_errors=True)
            msg = f"study folder '{self.root}' already holds a study (created meanwhile by another tuner)"
            raise StoreError(msg) from None
        fsync_dir(self.root)
        shutil.rmtree(self.creating, ignore_errors=True)

    def discard_partial(self) -> None:
        """Remove staging folders left by a kill during creation (never a live tuner's)."""
        from gptuner_core.engine.process.processes import pid_alive

        for staged in self.root.glob(f"{CREATING}-*"):
            pid = staged.name.rsplit("-", 1)[-1]
            if not pid.isdigit() or int(pid) == os.getpid() or not pid_alive(int(pid)):
                shutil.rmtree(staged, ignore_errors=True)
        if self.store.is_file() and self._uninitialised_store():
            for suffix in ("", "-wal", "-shm", ".lock"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{self.store}{suffix}").unlink()

    def discard_creation_leftovers(self) -> str:
        """Remove what a creation killed before ``study.json`` left (its temporary file, a
        staging folder) when no live tuner owns it; what was removed, as text (``""``: none)."""
        from gptuner_core.engine.process.processes import pid_alive

        gone = []
        if self.root.is_dir():
            for p in self.root.glob(f".{CONFIG}.tmp-*"):
                pid = p.name.rsplit("-", 1)[-1]
                if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
                    with contextlib.suppress(OSError):
                        p.unlink()
                        gone.append(p.name)
            staged = [p.name for p in self.root.glob(f"{CREATING}-*")]
            self.discard_partial()
            gone += [n for n in staged if not (self.root / n).exists()]
        return ", ".join(gone)

    # -- stop requests ---------------------------------------------------------------------
    def request_stop(self) -> None:
        write_atomic(self.stop_file, f"stop requested {time.time()}\n".encode())

    def stop_requested(self) -> bool:
        return self.stop_file.exists()

    def clear_stop(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.stop_file.unlink()

    # -- the configuration file ------------------------------------------------------------
    def write_config(self, config: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        write_atomic(self.config, json.dumps(config, indent=1, sort_keys=True).encode())

    def read_config(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.config.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError) as exc:
            msg = f"study configuration '{self.config}' is unreadable ({exc})"
            raise StoreError(msg) from None
        if not isinstance(data, dict):
            msg = f"study configuration '{self.config}' must hold a JSON object (got {type(data).__name__})"
            raise StoreError(msg)
        return data


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file, fsync and rename: a reader (or a resume
    after a kill or a full disk) sees the old file or the new one, never half of one."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with tmp.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp)):  # the write's own path
            exc.filename, exc.filename2 = None, str(path)
        raise
    fsync_dir(path.parent)


def discard_stale_siblings(path: Path) -> list[str]:
    """Remove what killed writers left beside ``path``: ``.NAME.tmp-PID`` (``write_atomic``, the
    ``--output`` copy), ``.NAME.partial-PID`` / ``.NAME.old-PID`` (bundles) whose PID is gone."""
    from gptuner_core.engine.process.processes import pid_alive

    gone = []
    for p in path.parent.glob(f".{path.name}.*-*"):
        stem, _, pid = p.name.rpartition("-")
        if stem.rsplit(".", 1)[-1] not in ("tmp", "partial", "old") or not pid.isdigit():
            continue
        if int(pid) == os.getpid() or pid_alive(int(pid)):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                p.unlink()
        gone.append(p.name)
    return gone


def save_npz_atomic(path: Path, arrays: dict[str, np.ndarray], *, compressed: bool = False) -> None:
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    write_atomic(path, buf.getvalue())


def save_npy_atomic(path: Path, array: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, array)
    write_atomic(path, buf.getvalue())


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` (read fully, so a damaged file fails here, as a StoreError)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: np.asarray(data[k]) for k in data.files}
    except FileNotFoundError:
        raise
    except Exception as exc:  # noqa: BLE001 - zipfile/numpy raise many types for damage
        msg = f"'{path}' is damaged ({type(exc).__name__}: {exc})"
        raise StoreError(msg) from None


def arrays_sha256(arrays: dict[str, np.ndarray]) -> str:
    """A content hash of named arrays (names, dtypes, shapes and bytes), order-independent."""
    import hashlib

    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()
