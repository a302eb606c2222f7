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
from gptuner_core.storage.paths import StudyPaths
from gptuner_core.storage.sqlite_open import APPLICATION_ID  # noqa: F401 - re-exported
from gptuner_core.storage.sqlite_open import BUSY_TIMEOUT_MS
from gptuner_core.storage.sqlite_open import LOCK_SUFFIX  # noqa: F401 - re-exported
from gptuner_core.storage.sqlite_open import SCHEMA_VERSION  # noqa: F401 - re-exported
from gptuner_core.storage.sqlite_open import STORE_FILENAME
from gptuner_core.storage.sqlite_open import SYNC_MODES
from gptuner_core.storage.sqlite_open import SQLiteOpening


if TYPE_CHECKING:
    from collections.abc import Callable

    from gptuner_core.records import CandidateRecord


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


class SQLiteStudyStore(SQLiteOpening, StudyStore):
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
        self._paths = StudyPaths(self.study_dir)
        self.readonly = readonly
        self._mutex = threading.RLock()
        self._lock_fd: int | None = None
        self._conn: sqlite3.Connection | None = None
        sync = synchronous.upper()
        if sync not in SYNC_MODES:
            msg = f"synchronous must be one of {list(SYNC_MODES)} (got {synchronous!r})"
            raise StoreError(msg)
        if readonly:
            self._conn = self._open_reader()
        else:
            self._conn = self._open_writer(sync)

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
        row = record_to_row(record.replace(
            artifact_path=self._paths.stored(record.artifact_path),
            log_path=self._paths.stored(record.log_path),
        ))
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
            return self._located(rows_to_records([r[:-1] for r in rows], [r[-1] for r in rows]))
        rows = self._read(f"{SELECT_CANDIDATES} FROM candidates c ORDER BY c.number")
        return self._located(rows_to_records(rows))

    def _located(self, records: list[CandidateRecord]) -> list[CandidateRecord]:
        """Records with their study paths absolute where the study is now (``storage.paths``)."""
        actual = self._paths.actual
        return [
            r if not (r.artifact_path or r.log_path)
            else r.replace(artifact_path=actual(r.artifact_path), log_path=actual(r.log_path))
            for r in records
        ]

    def candidate(self, number: int) -> CandidateRecord | None:
        rows = self._read(
            f"{SELECT_CANDIDATES}, s.data FROM candidates c "
            "LEFT JOIN samples s ON s.number = c.number WHERE c.number = ?",
            (int(number),),
        )
        return self._located(rows_to_records([rows[0][:-1]], [rows[0][-1]]))[0] if rows else None

    def state_counts(self) -> dict[str, int]:
        return dict(self._read("SELECT state, COUNT(*) FROM candidates GROUP BY state"))

    def best_median_ms(self) -> float | None:
        rows = self._read("SELECT MIN(median_ms) FROM candidates WHERE state = ?",
                          (CandidateState.COMPLETE.value,))
        return rows[0][0] if rows and rows[0][0] is not None else None

    def delete_unfinished(self, also: tuple[int, ...] = ()) -> list[int]:
        unfinished = (CandidateState.PENDING.value, CandidateState.RUNNING.value)

        def body(conn: sqlite3.Connection) -> list[int]:
            numbers = sorted({
                r[0]
                for r in conn.execute(
                    "SELECT number FROM candidates WHERE state IN (?, ?) ORDER BY number",
                    unfinished,
                )
            } | {r[0] for n in also for r in conn.execute("SELECT number FROM candidates WHERE number = ?", (n,))})
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
