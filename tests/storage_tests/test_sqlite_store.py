"""SQLite study store: the shared contract plus WAL, read-only, locking and kill-safety."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gptuner_core.errors import StoreError
from gptuner_core.records import CandidateState
from gptuner_core.storage import STORE_FILENAME
from gptuner_core.storage import Event
from gptuner_core.storage import SQLiteStudyStore
from gptuner_core.storage import StudyStore
from gptuner_core.storage import file_revision
from gptuner_core.storage import open_store
from gptuner_core.storage.sqlite import SCHEMA_VERSION
from gptuner_core.testing.store_contract import StoreContract
from gptuner_core.testing.store_contract import make_record


REPO = Path(__file__).resolve().parents[2]


class TestSQLiteStoreContract(StoreContract):
    """The shared contract, bound to a fresh SQLite store."""

    @pytest.fixture
    def store(self, tmp_path: Path):
        with open_store(tmp_path / "study") as s:
            yield s


def _spawn(code: str, *args: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


WRITER = """
import sys, time
from gptuner_core.storage import open_store
from gptuner_core.testing.store_contract import make_record
store = open_store(sys.argv[1])
store.init_study({"model": "m.onnx"}, {"device": "cpu"})
n_max = int(sys.argv[2])
for n in range(n_max):
    store.put_candidate(make_record(n, n_samples=100))
    print(n, flush=True)
print("done", flush=True)
time.sleep(60)
"""


class TestOpen:
    """Opening, refusing and identifying stores."""

    def test_api_types(self, tmp_path: Path) -> None:
        """open_store returns a StudyStore; the file is named study.sqlite and runs in WAL mode."""
        with open_store(tmp_path / "s") as store:
            assert isinstance(store, StudyStore)
            assert isinstance(store, SQLiteStudyStore)
            assert store.path == tmp_path / "s" / STORE_FILENAME
            conn = sqlite3.connect(store.path)
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            conn.close()
        assert Event.__name__ == "Event"

    def test_readonly_without_study(self, tmp_path: Path) -> None:
        """A folder without a store cannot be opened read-only; nothing is created."""
        d = tmp_path / "empty"
        d.mkdir()
        expected = f"no study found in '{d}' (expected {d / STORE_FILENAME})"
        with pytest.raises(StoreError) as info:
            open_store(d, readonly=True)
        assert str(info.value) == expected
        assert list(d.iterdir()) == []
        with pytest.raises(StoreError, match="no study found"):
            open_store(tmp_path / "missing", readonly=True)

    def test_corrupt_file(self, tmp_path: Path) -> None:
        """A non-SQLite file is refused by readers and writers with a message naming it."""
        path = tmp_path / STORE_FILENAME
        path.write_bytes(b"this is not a database, just some text" * 100)
        for readonly in (True, False):
            with pytest.raises(StoreError, match="not a readable gptuner study store") as info:
                open_store(tmp_path, readonly=readonly)
            assert str(path) in str(info.value)

    def test_foreign_sqlite(self, tmp_path: Path) -> None:
        """An SQLite database that is not ours is refused, not modified."""
        path = tmp_path / STORE_FILENAME
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
        with pytest.raises(StoreError, match="not a gptuner study store"):
            open_store(tmp_path)
        with pytest.raises(StoreError, match="not a gptuner study store"):
            open_store(tmp_path, readonly=True)

    def test_newer_schema_refused(self, tmp_path: Path) -> None:
        """A store from a newer gptuner (higher user_version) is refused with both versions."""
        open_store(tmp_path).close()
        conn = sqlite3.connect(tmp_path / STORE_FILENAME)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        conn.close()
        msg = f"schema version {SCHEMA_VERSION + 1}, newer than this gptuner supports ({SCHEMA_VERSION})"
        for readonly in (True, False):
            with pytest.raises(StoreError, match=msg.replace("(", r"\(").replace(")", r"\)")):
                open_store(tmp_path, readonly=readonly)

    def test_reopen_keeps_data(self, tmp_path: Path) -> None:
        """Closing and reopening the writer keeps everything (resume)."""
        with open_store(tmp_path) as store:
            store.init_study({"a": 1}, {"b": 2})
            store.put_candidate(make_record(0))
        with open_store(tmp_path) as store:
            assert store.config() == {"a": 1}
            assert store.candidate(0) == make_record(0)

    def test_second_writer_refused(self, tmp_path: Path) -> None:
        """Only one writer per study; the lock is released on close."""
        first = open_store(tmp_path)
        with pytest.raises(StoreError, match=f"already open for writing \\(pid {os.getpid()}\\)"):
            open_store(tmp_path)
        with open_store(tmp_path, readonly=True) as reader:  # readers are always allowed
            assert reader.candidates() == []
        first.close()
        open_store(tmp_path).close()

    def test_bad_synchronous(self, tmp_path: Path) -> None:
        """Only NORMAL and FULL are accepted."""
        with pytest.raises(StoreError, match=r"synchronous must be one of \['NORMAL', 'FULL'\]"):
            open_store(tmp_path, synchronous="OFF")
        open_store(tmp_path, synchronous="full").close()


class TestReadOnly:
    """Readers see committed data, never write, never block."""

    def test_readonly_refuses_writes(self, tmp_path: Path) -> None:
        """Every write method of a reader raises StoreError saying it is read-only."""
        open_store(tmp_path).close()
        with open_store(tmp_path, readonly=True) as reader:
            assert reader.readonly
            calls = [
                lambda: reader.init_study({}, {}),
                lambda: reader.set_fingerprint({}),
                lambda: reader.set_meta("status", "x"),
                lambda: reader.put_candidate(make_record(0)),
                lambda: reader.delete_unfinished(),
                lambda: reader.add_event("warning", {}),
            ]
            for call in calls:
                with pytest.raises(StoreError, match="is open read-only; cannot"):
                    call()

    def test_a_reader_of_a_closed_study_leaves_no_files(self, tmp_path: Path) -> None:
        """Defect (issue 43 item 7): read-only commands (show, report...) left study.sqlite-wal
        and -shm in a study folder no tuner had open."""
        with open_store(tmp_path) as writer:
            writer.init_study({"a": 1}, {"b": 2})
            writer.put_candidate(make_record(0))
        before = sorted(p.name for p in tmp_path.iterdir())
        with open_store(tmp_path, readonly=True) as reader:
            assert [r.number for r in reader.candidates()] == [0]
        assert sorted(p.name for p in tmp_path.iterdir()) == before

    def test_reader_sees_commits_while_writer_open(self, tmp_path: Path) -> None:
        """A reader opened before the writes sees each commit at once, writer still open."""
        with open_store(tmp_path) as writer:
            writer.init_study({"a": 1}, {"b": 2})
            with open_store(tmp_path, readonly=True) as reader:
                assert reader.candidates() == []
                for n in range(3):
                    writer.put_candidate(make_record(n))
                    assert [r.number for r in reader.candidates()] == list(range(n + 1))
                writer.set_meta("status", "running")
                writer.add_event("warning", {"x": 1})
                assert reader.get_meta("status") == "running"
                assert reader.candidate(2) == make_record(2)
                assert reader.config() == {"a": 1}
                assert [e.kind for e in reader.events()] == ["warning"]

    def test_reader_never_locked_during_writes(self, tmp_path: Path) -> None:
        """While another process commits as fast as it can, reads never fail or see torn data."""
        proc = _spawn(WRITER, str(tmp_path), "1500")
        try:
            assert proc.stdout.readline().strip() == "0"
            reader = open_store(tmp_path, readonly=True)
            reads = 0
            seen = 0
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                records = reader.candidates()
                numbers = [r.number for r in records]
                assert numbers == list(range(len(numbers)))  # never a gap or torn row
                assert len(numbers) >= seen
                seen = len(numbers)
                if records:
                    assert reader.candidate(numbers[-1]).samples_ms == make_record(numbers[-1], n_samples=100).samples_ms
                reads += 1
                if seen == 1500:
                    break
            reader.close()
            assert seen == 1500
            assert reads > 5
        finally:
            proc.kill()
            proc.wait()

    def test_file_revision_changes_on_commit(self, tmp_path: Path) -> None:
        """file_revision changes with every commit, even before a checkpoint."""
        assert file_revision(tmp_path) == (0, 0, 0, 0)
        with open_store(tmp_path) as writer:
            before = file_revision(tmp_path)
            time.sleep(0.01)
            writer.put_candidate(make_record(0))
            assert file_revision(tmp_path) != before


class TestKill:
    """A SIGKILLed writer loses no committed candidate."""

    def test_sigkill_mid_study(self, tmp_path: Path) -> None:
        """Kill the writer between commits; every reported candidate is intact afterwards."""
        proc = _spawn(WRITER, str(tmp_path), "100000")
        committed = -1
        try:
            while committed < 200:
                line = proc.stdout.readline()
                assert line, proc.stderr.read()
                committed = int(line)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        with open_store(tmp_path, readonly=True) as reader:
            records = reader.candidates(with_samples=True)
        # everything reported as committed is there, exactly; at most a few more made it in
        assert len(records) >= committed + 1
        assert [r.number for r in records] == list(range(len(records)))
        for r in records:
            assert r == make_record(r.number, n_samples=100)
        # the writer lock died with the process: a new writer can continue the study
        with open_store(tmp_path) as writer:
            assert writer.config() == {"model": "m.onnx"}
            assert writer.delete_unfinished() == []
            writer.put_candidate(make_record(len(records), state=CandidateState.CRASHED))
            assert len(writer.candidates()) == len(records) + 1
