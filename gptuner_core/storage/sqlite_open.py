"""Opening a SQLite study store: schema and migrations, the header check, the writer lock.

(The store's guarantees are described in ``gptuner_core.storage.sqlite``.)
"""

from __future__ import annotations

import os
import sqlite3
from typing import TYPE_CHECKING

from gptuner_core.errors import StoreError


if TYPE_CHECKING:
    from pathlib import Path


STORE_FILENAME = "study.sqlite"
LOCK_SUFFIX = ".lock"
SCHEMA_VERSION = 1
APPLICATION_ID = 0x67707475  # "gptu"
BUSY_TIMEOUT_MS = 10_000
SYNC_MODES = ("NORMAL", "FULL")

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


class SQLiteOpening:
    """The opening half of :class:`~gptuner_core.storage.sqlite.SQLiteStudyStore`."""

    path: Path
    study_dir: Path
    _lock_fd: int | None

    def _open_reader(self) -> sqlite3.Connection:
        if not self.path.is_file():
            found = f"the SQLite file {self.path}; found a folder there" if self.path.is_dir() else self.path
            msg = f"no study found in '{self.study_dir}' (expected {found})"
            raise StoreError(msg)
        # no tuner has the study open (no write-ahead log, the writer lock free): read it as
        # immutable, else SQLite leaves -wal and -shm files a read-only connection cannot remove
        quiet = "&immutable=1" if self._no_writer() else ""
        uri = f"{self.path.resolve().as_uri()}?mode=ro{quiet}"
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

    def _no_writer(self) -> bool:
        """No write-ahead log beside the store and no process holding the writer lock (a tuner
        that has the study open keeps both)."""
        if os.path.exists(f"{self.path}-wal"):
            return False
        try:
            import fcntl

            fd = os.open(str(self.path) + LOCK_SUFFIX, os.O_RDONLY)
        except (ImportError, OSError):  # no lock file: no writer since it was made
            return not os.path.exists(str(self.path) + LOCK_SUFFIX)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return False
        finally:
            os.close(fd)  # (drops the probe's shared lock)
        return True

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
