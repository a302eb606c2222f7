"""Which candidates keep their build outputs, pruning the others, rebuilding on demand, and the
study's disk use.

A candidate's folder holds small records (``job.json``, ``result.json``, ``log.txt``, ``phase``,
``profile.json``) and build outputs (``artifact/``, a backend's per-candidate caches such as ONNX
Runtime's transformed model, ``outputs.npz``). ``--keep-artifacts`` says whose build outputs stay:

* ``all``: every candidate's (the outputs for the gate too, compressed);
* ``top-k`` (default): the default route's and the re-validation contenders' (the top
  ``--revalidate-top-k`` eligible candidates by screening latency, which include the winner);
* ``best``: while the study runs as ``top-k``; once it has a winner, the default's and the winner's.

A duplicate never keeps a copy: its record points at the first candidate's artifact. Pruning a
candidate writes a ``pruned`` marker first, then deletes its build outputs, so a kill at any
instant leaves a folder that is either complete or marked. A pruned candidate that is needed again
(a racing re-measurement, a re-validation after ``--continue`` whose contenders changed) is rebuilt
from its route in place (``child.remeasure`` calls :func:`needs_rebuild`), never a crash.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterable
    from collections.abc import Iterator
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import Winner

KEEP_MODES = ("best", "top-k", "all")
DEFAULT_KEEP = "top-k"
#: the small records of a candidate folder, never pruned (``engine.process.turn``: ``built.json``,
#: its build, written before its result; ``turn``, what the parent told it: its grant, or to exit,
#: which is all a round process started ahead and cancelled leaves instead of a result;
#: ``turn_alone``, its grant of the device alone)
RECORD_FILES = frozenset({"job.json", "result.json", "log.txt", "phase", "profile.json", ".rebuild.lock",
                          "built.json", "turn", "turn_alone"})
PRUNED = "pruned"
REBUILDING = "rebuilding"


def keep_mode(value: Any) -> str:
    """``--keep-artifacts`` from a configuration (legacy booleans: true = all, false = best)."""
    if value is True:
        return "all"
    if value is False:
        return "best"
    return value


def kept_numbers(history: Sequence[CandidateRecord], mode: str, top_k: int,
                 winner: Winner | None = None) -> set[int] | None:
    """Candidates whose build outputs stay (``None``: every candidate's)."""
    from gptuner_core.engine.decide import verdict

    if mode == "all":
        return None
    keep = {0}
    top = {r.number for r in verdict.contenders(history)[: max(top_k, 1)]}
    if winner is None or mode == "top-k":
        keep |= top
    if winner is not None:
        keep |= {n for n in (winner.number, winner.best) if n is not None}
    return keep


# -- one candidate folder ------------------------------------------------------------------
def candidate_dir_of(artifact: str | os.PathLike[str] | None) -> Path | None:
    """The candidate folder (``STUDY/candidates/NNNNN``) an artifact path lies in, if any."""
    if not artifact:
        return None
    path = Path(artifact)
    for parent in path.parents:
        if parent.parent.name == "candidates" and parent.name.isdigit():
            return parent
    return None


def build_outputs(folder: Path) -> Iterator[Path]:
    """Everything in a candidate (or re-measurement) folder that is not one of its records;
    ``rung*`` sub-folders (racing re-measurements) are searched the same way."""
    if not folder.is_dir():
        return
    for entry in sorted(folder.iterdir()):
        if entry.name in RECORD_FILES or entry.name in (PRUNED, REBUILDING):
            continue
        if entry.is_dir() and not entry.is_symlink() and entry.name.startswith("rung"):
            yield from build_outputs(entry)
        else:
            yield entry


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def prune_folder(folder: Path) -> int:
    """Delete a folder's build outputs (marked ``pruned`` first); the bytes freed."""
    outputs = list(build_outputs(folder))
    if not outputs:
        return 0
    freed = sum(tree_bytes(p) for p in outputs)
    from gptuner_core.engine.files.workspace import write_atomic

    write_atomic(folder / PRUNED, b"build outputs deleted (--keep-artifacts); rebuilt from the route when needed\n")
    for path in outputs:
        _remove(path)
    return freed


def trim_folder(folder: Path, info: dict[str, Any]) -> int:
    """A kept candidate keeps what loading it needs: ``artifact/`` and the files its build info
    names in the folder (with their siblings of the same stem, e.g. metadata or external data);
    build scratch (a transform's intermediate models, the profiler's trace) goes. Bytes freed."""
    named = [Path(v) for v in info.values() if isinstance(v, str) and os.path.isabs(v)]
    named = [p for p in named if _inside(p, folder)]

    def needed(path: Path) -> bool:
        return any(path.parent == p.parent and (path.name == p.name or path.name.startswith(p.stem + "."))
                   for p in named)

    freed = 0
    for entry in build_outputs(folder):
        if entry.name == "artifact":
            continue
        files = [entry] if not entry.is_dir() else [f for f in entry.rglob("*") if not f.is_dir()]
        for f in files:
            if not needed(f):
                freed += tree_bytes(f)
                _remove(f)
    return freed


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def needs_rebuild(artifact: str | os.PathLike[str] | None, info: dict[str, Any]) -> bool:
    """True when a recorded artifact is gone (pruned, or its rebuild was cut short): the
    artifact path, or a file its build info names inside the candidate folder, is missing."""
    folder = candidate_dir_of(artifact)
    if folder is None:
        return False
    if (folder / PRUNED).exists() or (folder / REBUILDING).exists() or not Path(str(artifact)).exists():
        return True
    for value in info.values():
        if isinstance(value, str) and os.path.isabs(value) and Path(value).parent != Path(value):
            with contextlib.suppress(ValueError):
                Path(value).relative_to(folder)
                if not Path(value).exists():
                    return True
    return False


@contextlib.contextmanager
def rebuilding(folder: Path, still_needed: Callable[[], bool]) -> Iterator[bool]:
    """Hold the folder's rebuild lock; yields whether a rebuild is still needed (another
    process may have rebuilt it meanwhile). The caller rebuilds into ``folder / "artifact"``;
    the markers go once the body returns."""
    import fcntl

    from gptuner_core.engine.files.workspace import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".rebuild.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not still_needed():
                yield False
                return
            write_atomic(folder / REBUILDING, b"rebuilding from the route\n")
            for path in build_outputs(folder):
                _remove(path)
            yield True
            for marker in (PRUNED, REBUILDING):
                with contextlib.suppress(FileNotFoundError):
                    (folder / marker).unlink()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# -- a study -------------------------------------------------------------------------------
def prune_study(root: Path, history: Iterable[CandidateRecord], keep: set[int] | None,
                busy: Iterable[int] = ()) -> int:
    """Prune the build outputs of finished candidates outside ``keep`` (none in flight); the
    bytes freed. ``keep=None`` keeps everything."""
    from gptuner_core.engine.files.workspace import StudyWorkspace

    if keep is None:
        return 0
    ws, busy = StudyWorkspace(root), set(busy)
    freed = 0
    for rec in history:
        if rec.number in keep or rec.number in busy or not rec.state.is_finished():
            continue
        folder = ws.candidate_dir(rec.number)
        if not (folder / PRUNED).exists() or any(build_outputs(folder)):
            freed += prune_folder(folder)
    return freed


def prune_remeasurements(root: Path) -> int:
    """Build outputs left in re-measurement folders (re-validation rounds, drift baselines)."""
    freed = 0
    for group in ("revalidation", "baselines"):
        base = root / group
        if base.is_dir():
            for folder in base.iterdir():
                freed += prune_folder(folder) if folder.is_dir() else 0
    return freed


def drop_duplicate_copy(root: Path, rec: CandidateRecord, original: CandidateRecord) -> CandidateRecord:
    """A duplicate keeps no artifact copy: its build outputs go, its record points at the first."""
    from gptuner_core.engine.files.workspace import StudyWorkspace

    folder = StudyWorkspace(root).candidate_dir(rec.number)
    for path in build_outputs(folder):
        _remove(path)
    return rec.replace(artifact_path=original.artifact_path, artifact_size=0,
                       extra={**rec.extra, "artifact_of": original.number})


# -- disk use ------------------------------------------------------------------------------
def tree_bytes(path: Path) -> int:
    """Bytes a file or folder takes (allocated blocks; hard links counted once; a symbolic link
    is counted, never followed). Walked with ``os.scandir``: the tuner calls it at every
    candidate's commit, on folders of thousands of Inductor cache files (on the H100, session 54,
    pathlib's ``rglob`` took 0.2-0.6 s a commit, holding the hints to the round line)."""
    return _walk(os.fspath(path), set())


def _own(st: os.stat_result, seen: set[tuple[int, int]]) -> int:
    """``st``'s allocated bytes, or 0 when ``seen`` has counted its inode already."""
    if (st.st_dev, st.st_ino) in seen:
        return 0
    seen.add((st.st_dev, st.st_ino))
    return st.st_blocks * 512 if hasattr(st, "st_blocks") else st.st_size


def _walk(path: str, seen: set[tuple[int, int]], skip: frozenset[str] = frozenset()) -> int:
    """Bytes under ``path`` (itself included) not yet in ``seen``, the paths in ``skip`` and
    what is under them left out; links never followed."""
    try:
        first = os.lstat(path)
    except OSError:
        return 0
    total = _own(first, seen)
    folders = [path] if stat.S_ISDIR(first.st_mode) else []
    while folders:
        try:
            entries = os.scandir(folders.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                if entry.path in skip:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += _own(st, seen)
                if stat.S_ISDIR(st.st_mode):
                    folders.append(entry.path)
    return total


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:
        return []


def _split(folder: str, seen: set[tuple[int, int]]) -> tuple[int, int, bool]:
    """A candidate folder's ``(build output bytes, record bytes, has an artifact)``: the parts
    :func:`build_outputs` names, then the rest (the folder itself included) in one walk that
    leaves them out, so each file is walked once."""
    top = Path(folder)
    # spelled as scandir spells its entries' paths, which ``skip`` is compared with
    outputs = [os.path.join(folder, *p.relative_to(top).parts) for p in build_outputs(top)]
    build = sum(_walk(p, seen) for p in outputs)
    records = _walk(folder, seen, skip=frozenset(outputs))
    return build, records, any(os.path.basename(p) == "artifact" for p in outputs)


@dataclass(frozen=True, slots=True, kw_only=True)
class DiskUse:
    """Where a study folder's bytes are."""

    total: int
    build_outputs: int
    records: int
    study_files: int
    remeasurements: int
    with_artifacts: tuple[int, ...]
    pruned: tuple[int, ...]

    def summary(self) -> str:
        kept = ", ".join(f"#{n}" for n in self.with_artifacts[:12])
        more = f" +{len(self.with_artifacts) - 12}" if len(self.with_artifacts) > 12 else ""
        return (f"disk: {human_bytes(self.total)} (build outputs {human_bytes(self.build_outputs)} "
                f"of {len(self.with_artifacts)} candidate(s){': ' + kept + more if kept else ''}; "
                f"{len(self.pruned)} pruned; records {human_bytes(self.records)}; study files "
                f"{human_bytes(self.study_files)}; re-measurements {human_bytes(self.remeasurements)})")

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "build_outputs": self.build_outputs, "records": self.records,
                "study_files": self.study_files, "remeasurements": self.remeasurements,
                "with_artifacts": list(self.with_artifacts), "pruned": list(self.pruned)}


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def disk_use(root: str | os.PathLike[str]) -> DiskUse:
    """The study folder's disk use, by part (the dashboard and ``gptuner show`` call this, the
    tuner at each candidate's commit): one walk, each file counted once, in one part."""
    seen: set[tuple[int, int]] = set()
    build = records = remeasure = other = 0
    with_artifacts: list[int] = []
    pruned: list[int] = []
    try:
        other = _own(os.lstat(root), seen)
    except OSError:
        return DiskUse(total=0, build_outputs=0, records=0, remeasurements=0, study_files=0,
                       with_artifacts=(), pruned=())
    for entry in _entries(os.fspath(root)):
        if entry.name in ("revalidation", "baselines"):
            remeasure += _walk(entry.path, seen)
        elif entry.name != "candidates" or not entry.is_dir(follow_symlinks=False):
            other += _walk(entry.path, seen)
        else:
            other += _own(entry.stat(follow_symlinks=False), seen)
            for folder in _entries(entry.path):
                if not folder.is_dir(follow_symlinks=False):
                    records += _walk(folder.path, seen)
                    continue
                b, r, artifact = _split(folder.path, seen)
                build, records = build + b, records + r
                if folder.name.isdigit():
                    if artifact:
                        with_artifacts.append(int(folder.name))
                    elif os.path.exists(os.path.join(folder.path, PRUNED)):
                        pruned.append(int(folder.name))
    return DiskUse(total=build + records + remeasure + other, build_outputs=build, records=records,
                   remeasurements=remeasure, study_files=other,
                   with_artifacts=tuple(with_artifacts), pruned=tuple(pruned))
