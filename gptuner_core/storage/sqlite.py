"""The study store on SQLite (stdlib ``sqlite3``): WAL mode, one writer, read-only readers.

Durability. The database runs in WAL mode with ``synchronous=NORMAL`` by default: a transaction
is complete once its frames are appended to ``study.sqlite-wal`` (in the OS page cache), so a
``SIGKILL``, an out-of-memory kill or a segfault of the writer process never loses a committed
candidate and never leaves a half-written one (SQLite recovers the WAL on the next open). Only an
OS crash or power loss may roll back the last few commits (the database is never corrupted; the
tuner's resume simply re-runs those candidates). Pass ``synchronous="FULL"`` to fsync the WAL on
every commit when power-loss durability is wanted (``benchmarks/store_scale.py`` measures both).

Concurrency. Exactly one writer per study, enforced with an advisory ``flock`` on
``study.sqlite.lock`` (released by the OS when the writer dies, even by ``SIGKILL``). Readers open
``file:...?mode=ro`` URIs: in WAL mode they read a consistent snapshot and never block the writer;
a reader waits (``busy_timeout``) and retries on the rare transient "database is locked" (WAL
recovery after a writer's crash). A read-only store raises :class:`StoreError` on every write.

Schema (``PRAGMA user_version`` = :data:`SCHEMA_VERSION`, ``PRAGMA application_id`` marks the
file as a gptuner store): ``study`` (config + fingerprint, one row), ``meta`` (JSON values by
key), ``candidates`` (queried fields as columns, the rest as JSON), ``samples`` (raw latency
samples as little-endian float64 bytes, separate so listing candidates stays fast), ``events``.
A store written by a newer gptuner (higher schema version) is refused with a clear message.

Floats: SQLite stores NaN as NULL, so a NaN in a column field (``speedup``, ``build_time_s``,
...) reads back as ``None``; NaN/inf inside JSON fields and samples round-trip exactly.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import StoreError
from gptuner_core.records import CandidateState
from gptuner_core.storage._base import Event
from gptuner_core.storage._base import StudyStore
from gptuner_core.storage._rows import INSERT_CANDIDATE
from gptuner_core.storage._rows import SELECT_CANDIDATES
from gptuner_core.storage._rows import dumps
from gptuner_core.storage._rows import record_to_row
from gptuner_core.storage._rows import rows_to_records
from gptuner_core.storage._rows import samples_blob


if TYPE_CHECKING:
    from collections.abc import Callable

    from gptuner_core.records import CandidateRecord


STORE_FILENAME = "study.sqlite"
LOCK_SUFFIX = ".lock"
SCHEMA_VERSION = 1
APPLICATION_ID = 0x67707475  # "gptu"
BUSY_TIMEOUT_MS = 10_000
_SYNC_MODES = ("NORMAL", "FULL")

_SCHEMA_V1 = """
CREATE TABLE study (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    created_at REAL NOT NULL,
    config TEXT NOT NULL,
    fingerprint TEXT NOT NULL
);
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE candidates (
    number INTEGER PRIMARY KEY,
    state TEXT NOT NULL,
    requested_route TEXT NOT NULL,
    effective_route TEXT,
    error TEXT,
    phase TEXT NOT NULL DEFAULT '',
    started_at REAL,
    finished_at REAL,
    build_time_s REAL,
    measure_time_s REAL,
    artifact_path TEXT,
    artifact_sha256 TEXT,
    artifact_size INTEGER,
    duplicate_of INTEGER,
    speedup REAL,
    median_ms REAL,
    log_path TEXT,
    accuracy TEXT,
    latency TEXT,
    speedup_ci TEXT,
    strategy_info TEXT NOT NULL,
    telemetry TEXT NOT NULL,
    extra TEXT NOT NULL
);
CREATE INDEX candidates_state ON candidates (state);
CREATE INDEX candidates_sha256 ON candidates (artifact_sha256);
CREATE TABLE samples (
    number INTEGER PRIMARY KEY,
    n INTEGER NOT NULL,
    data BLOB NOT NULL
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX events_kind ON events (kind);
"""

#: version reached -> DDL that upgrades from the previous version (1 creates the store).
_MIGRATIONS: dict[int, str] = {1: _SCHEMA_V1}


def store_path(study_dir: str | os.PathLike[str]) -> Path:
    """Where the store of ``study_dir`` lives."""
    return Path(study_dir) / STORE_FILENAME


def file_revision(study_dir: str | os.PathLike[str]) -> tuple[int, ...]:
    """A cheap change token for cache keys (changes on every commit; no SQLite involved).

    In WAL mode commits go to ``study.sqlite-wal``, so the main file's mtime alone does not
    change while the writer runs; this combines mtime and size of both files.
    """
    parts: list[int] = []
    for suffix in ("", "-wal"):
        try:
            st = os.stat(str(store_path(study_dir)) + suffix)
        except OSError:
            parts += [0, 0]
        else:
            parts += [st.st_mtime_ns, st.st_size]
    return tuple(parts)


class SQLiteStudyStore(StudyStore):
    """A study store in ``STUDY/study.sqlite``; see the module docstring for the guarantees.

    Use :func:`gptuner_core.storage.open_store` rather than this class directly.

    Args:
        study_dir: the study folder (created by a writer if missing).
        readonly: open a read-only reader (never blocks the writer; writes raise StoreError).
        synchronous: ``"NORMAL"`` (durable against process kill; default) or ``"FULL"``
            (also durable against power loss, one fsync per commit).

    Example:
        >>> with SQLiteStudyStore(tmp_path) as store:          # doctest: +SKIP
        ...     store.init_study({"model": "m.onnx"}, {"model_sha256": "..."})
        ...     store.put_candidate(CandidateRecord(number=0, requested_route=""))
    """

    def __init__(
        self,
        study_dir: str | os.PathLike[str],
        *,
        readonly: bool = False,
        synchronous: str = "NORMAL",
    ) -> None:
        self.study_dir = Path(study_dir)
        self.path = store_path(self.study_dir)
        self.readonly = readonly
        self._mutex = threading.RLock()
        self._lock_fd: int | None = None
        self._conn: sqlite3.Connection | None = None
        sync = synchronous.upper()
        if sync not in _SYNC_MODES:
            msg = f"synchronous must be one of {list(_SYNC_MODES)} (got {synchronous!r})"
            raise StoreError(msg)
        if readonly:
            self._conn = self._open_reader()
        else:
            self._conn = self._open_writer(sync)

    # -- opening ---------------------------------------------------------------------------
    def _open_reader(self) -> sqlite3.Connection:
        if not self.path.is_file():
            msg = f"no study found in '{self.study_dir}' (expected {self.path})"
            raise StoreError(msg)
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        try:
            conn = sqlite3.connect(
                uri,
                uri=True,
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            msg = f"cannot open study store '{self.path}' read-only: {exc}"
            raise StoreError(msg) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            version = self._check_header(conn)
            if version == 0:
                msg = f"no study found in '{self.study_dir}' ({self.path} is empty: not initialised yet)"
                raise StoreError(msg)
            if version < SCHEMA_VERSION:
                msg = (
                    f"study store '{self.path}' has schema version {version}, older than this "
                    f"gptuner's ({SCHEMA_VERSION}); open it once for writing (e.g. "
                    "'gptuner tune --continue') to upgrade it"
                )
                raise StoreError(msg)
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_writer(self, synchronous: str) -> sqlite3.Connection:
        try:
            self.study_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot create study folder '{self.study_dir}': {exc}"
            raise StoreError(msg) from exc
        self._acquire_writer_lock()
        try:
            conn = sqlite3.connect(
                str(self.path),
                timeout=BUSY_TIMEOUT_MS / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            self._release_writer_lock()
            msg = f"cannot open study store '{self.path}': {exc}"
            raise StoreError(msg) from exc
        try:
            version = self._check_header(conn)
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                msg = f"cannot switch study store '{self.path}' to WAL mode (got journal_mode={mode})"
                raise StoreError(msg)
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if version < SCHEMA_VERSION:
                self._migrate(conn, version)
        except sqlite3.Error as exc:
            conn.close()
            self._release_writer_lock()
            msg = f"cannot initialise study store '{self.path}': {exc}"
            raise StoreError(msg) from exc
        except BaseException:
            conn.close()
            self._release_writer_lock()
            raise
        return conn

    def _acquire_writer_lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX: rely on SQLite's own locking
            return
        lock_path = str(self.path) + LOCK_SUFFIX
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            msg = (
                f"study '{self.study_dir}' is already open for writing (pid {holder}); "
                "one tuner per study: stop it first or open the study read-only"
            )
            raise StoreError(msg) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self._lock_fd = fd

    def _release_writer_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor drops the flock
            self._lock_fd = None

    def _check_header(self, conn: sqlite3.Connection) -> int:
        """Return the schema version (0 = empty file); refuse foreign or newer stores."""
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            n_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            msg = f"'{self.path}' is not a readable gptuner study store: {exc}"
            raise StoreError(msg) from exc
        if version == 0 and n_tables == 0:
            return 0
        if app_id != APPLICATION_ID:
            msg = (
                f"'{self.path}' is an SQLite database but not a gptuner study store "
                f"(application_id {app_id:#x}, expected {APPLICATION_ID:#x})"
            )
            raise StoreError(msg)
        if version > SCHEMA_VERSION:
            msg = (
                f"study store '{self.path}' has schema version {version}, newer than this "
                f"gptuner supports ({SCHEMA_VERSION}); upgrade gptuner to open it"
            )
            raise StoreError(msg)
        return version

    def _migrate(self, conn: sqlite3.Connection, version: int) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[target].split(";"):
                    if statement.strip():
                        conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # -- plumbing --------------------------------------------------------------------------
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            msg = f"study store '{self.path}' is closed"
            raise StoreError(msg)
        return self._conn

    def _check_writable(self, operation: str) -> None:
        if self.readonly:
            msg = f"study store '{self.path}' is open read-only; cannot {operation}"
            raise StoreError(msg)

    def _write(self, operation: str, body: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run ``body`` in one IMMEDIATE transaction, committed before returning."""
        self._check_writable(operation)
        with self._mutex:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    result = body(conn)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                msg = f"cannot {operation} in study store '{self.path}': {exc}"
                raise StoreError(msg) from exc
            return result

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """One SELECT = one consistent snapshot; retried on a transient lock."""
        with self._mutex:
            conn = self._connection()
            deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
            while True:
                try:
                    return conn.execute(sql, params).fetchall()
                except sqlite3.OperationalError as exc:
                    text = str(exc).lower()
                    if ("locked" in text or "busy" in text) and time.monotonic() < deadline:
                        time.sleep(0.01)
                        continue
                    msg = f"cannot read study store '{self.path}': {exc}"
                    raise StoreError(msg) from exc
                except sqlite3.DatabaseError as exc:
                    msg = f"cannot read study store '{self.path}': {exc}"
                    raise StoreError(msg) from exc

    # -- study header ----------------------------------------------------------------------
    def init_study(self, config: dict[str, Any], fingerprint: dict[str, Any]) -> None:
        cfg = dumps(config, "study config")
        fp = dumps(fingerprint, "study fingerprint")

        def body(conn: sqlite3.Connection) -> None:
            if conn.execute("SELECT 1 FROM study").fetchone():
                msg = f"study in '{self.study_dir}' is already initialised (continue it instead)"
                raise StoreError(msg)
            conn.execute(
                "INSERT INTO study (id, created_at, config, fingerprint) VALUES (1, ?, ?, ?)",
                (time.time(), cfg, fp),
            )

        self._write("init_study", body)

    def config(self) -> dict[str, Any]:
        """The recorded configuration, or ``{}`` while the study is not initialised."""
        rows = self._read("SELECT config FROM study WHERE id = 1")
        return json.loads(rows[0][0]) if rows else {}

    def fingerprint(self) -> dict[str, Any]:
        """The recorded fingerprint, or ``{}`` while the study is not initialised."""
        rows = self._read("SELECT fingerprint FROM study WHERE id = 1")
        return json.loads(rows[0][0]) if rows else {}

    def set_fingerprint(self, fingerprint: dict[str, Any]) -> None:
        fp = dumps(fingerprint, "study fingerprint")

        def body(conn: sqlite3.Connection) -> None:
            cur = conn.execute("UPDATE study SET fingerprint = ? WHERE id = 1", (fp,))
            if cur.rowcount != 1:
                msg = f"study in '{self.study_dir}' is not initialised (call init_study first)"
                raise StoreError(msg)

        self._write("set_fingerprint", body)

    def set_meta(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key:
            msg = f"meta key must be a non-empty str (got {key!r})"
            raise StoreError(msg)
        text = dumps(value, f"meta '{key}'")
        self._write(
            f"set meta '{key}'",
            lambda conn: conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, text)
            ),
        )

    def get_meta(self, key: str, default: Any = None) -> Any:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(rows[0][0]) if rows else default

    # -- candidates ------------------------------------------------------------------------
    def put_candidate(self, record: CandidateRecord) -> None:
        self._check_writable("put_candidate")
        row = record_to_row(record)
        samples = tuple(record.samples_ms)
        blob = samples_blob(samples) if samples else None
        number = row[0]

        def body(conn: sqlite3.Connection) -> None:
            conn.execute(INSERT_CANDIDATE, row)
            conn.execute("DELETE FROM samples WHERE number = ?", (number,))
            if blob is not None:
                conn.execute(
                    "INSERT INTO samples (number, n, data) VALUES (?, ?, ?)",
                    (number, len(samples), blob),
                )

        self._write(f"put candidate {number}", body)

    def candidates(self, *, with_samples: bool = False) -> list[CandidateRecord]:
        if with_samples:
            rows = self._read(
                f"{SELECT_CANDIDATES}, s.data FROM candidates c "
                "LEFT JOIN samples s ON s.number = c.number ORDER BY c.number"
            )
            return rows_to_records([r[:-1] for r in rows], [r[-1] for r in rows])
        rows = self._read(f"{SELECT_CANDIDATES} FROM candidates c ORDER BY c.number")
        return rows_to_records(rows)

    def candidate(self, number: int) -> CandidateRecord | None:
        rows = self._read(
            f"{SELECT_CANDIDATES}, s.data FROM candidates c "
            "LEFT JOIN samples s ON s.number = c.number WHERE c.number = ?",
            (int(number),),
        )
        return rows_to_records([rows[0][:-1]], [rows[0][-1]])[0] if rows else None

    def delete_unfinished(self) -> list[int]:
        unfinished = (CandidateState.PENDING.value, CandidateState.RUNNING.value)

        def body(conn: sqlite3.Connection) -> list[int]:
            numbers = [
                r[0]
                for r in conn.execute(
                    "SELECT number FROM candidates WHERE state IN (?, ?) ORDER BY number",
                    unfinished,
                )
            ]
            conn.executemany("DELETE FROM samples WHERE number = ?", [(n,) for n in numbers])
            conn.executemany("DELETE FROM candidates WHERE number = ?", [(n,) for n in numbers])
            return numbers

        return self._write("delete unfinished candidates", body)

    # -- events ----------------------------------------------------------------------------
    def add_event(self, kind: str, payload: dict[str, Any]) -> None:
        if not isinstance(kind, str) or not kind:
            msg = f"event kind must be a non-empty str (got {kind!r})"
            raise StoreError(msg)
        text = dumps(payload, f"event '{kind}' payload")
        self._write(
            f"add event '{kind}'",
            lambda conn: conn.execute(
                "INSERT INTO events (time, kind, payload) VALUES (?, ?, ?)",
                (time.time(), kind, text),
            ),
        )

    def events(self, kind: str | None = None) -> list[Event]:
        if kind is None:
            rows = self._read("SELECT id, time, kind, payload FROM events ORDER BY id")
        else:
            rows = self._read(
                "SELECT id, time, kind, payload FROM events WHERE kind = ? ORDER BY id", (kind,)
            )
        return [Event(id=i, time=t, kind=k, payload=json.loads(p)) for i, t, k, p in rows]

    def close(self) -> None:
        with self._mutex:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._release_writer_lock()

    def __enter__(self) -> SQLiteStudyStore:
        return self

    def __del__(self) -> None:  # best effort; close() is the contract
        try:
            self.close()
        except Exception:  # noqa: S110 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        mode = "read-only" if self.readonly else "writer"
        return f"SQLiteStudyStore('{self.study_dir}', {mode})"


__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "STORE_FILENAME",
    "SQLiteStudyStore",
    "file_revision",
    "store_path",
]
