"""Contract test suite for :class:`gptuner_core.storage.StudyStore` implementations.

Bind it like optuna's ``StorageTestCase``: subclass :class:`StoreContract` in a test module and
provide a ``store`` fixture yielding a fresh, writable, empty store::

    class TestSQLiteStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            with open_store(tmp_path / "study") as s:
                yield s

:func:`make_record` builds a fully populated :class:`CandidateRecord` (every field set) used by
the suite, the SQLite-specific tests and ``benchmarks/store_scale.py``.
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

import pytest

from gptuner_core.errors import StoreError
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats


if TYPE_CHECKING:
    from gptuner_core.storage import StudyStore


def make_record(
    number: int,
    *,
    n_samples: int = 50,
    state: CandidateState = CandidateState.COMPLETE,
    seed: int | None = None,
) -> CandidateRecord:
    """A candidate with every field populated with deterministic, non-trivial values."""
    rng = random.Random(number if seed is None else seed)
    samples = tuple(rng.uniform(0.5, 2.0) for _ in range(n_samples))
    median = sorted(samples)[len(samples) // 2] if samples else 1.0
    return CandidateRecord(
        number=number,
        requested_route=f"-graph_optimization_level={number % 4} -intra_op_threads={1 + number % 2}",
        state=state,
        effective_route=f"-graph_optimization_level={number % 4} -intra_op_threads=1",
        error=None if state is CandidateState.COMPLETE else f"failure of candidate {number}: ü ✓",
        phase="measure",
        strategy_info={"phase": 1 + number % 2, "index": number, "knobs": ["a", "b"]},
        started_at=1_700_000_000.0 + number,
        finished_at=1_700_000_000.5 + number + rng.random(),
        build_time_s=rng.uniform(0.1, 5.0),
        measure_time_s=rng.uniform(0.5, 3.0),
        artifact_path=f"/srv/builds/{number:05d}/model.onnx",  # outside any study: kept as is
        artifact_sha256=f"{number:064x}",
        artifact_size=1000 + number,
        duplicate_of=None if number == 0 else (number - 1 if number % 7 == 0 else None),
        accuracy=AccuracyResult(
            metric="l2",
            losses={"logits": rng.random() * 1e-4, "probs": 0.1 + rng.random()},
            task_metric=rng.random(),
            task_metric_name="top1",
        ),
        latency=LatencyStats(
            median_ms=median,
            mean_ms=sum(samples) / max(1, len(samples)),
            min_ms=min(samples, default=0.0),
            p5_ms=0.6,
            p95_ms=1.9,
            p99_ms=1.99,
            cv=0.05 + rng.random() / 10,
            ci_low_ms=median * 0.99,
            ci_high_ms=median * 1.01,
            n_samples=len(samples),
            calls_per_sample=1 + number % 3,
            warmup_calls=10,
            stop_reason="ci_converged",
            wall_s=rng.uniform(1.0, 3.0),
        ),
        samples_ms=samples,
        speedup=rng.uniform(0.8, 1.3),
        speedup_ci=(0.9, 1.1 + rng.random() / 10),
        telemetry={"clock_mhz": [1980, 1975], "temp_c": 61.5, "throttled": False},
        extra={"build_info": {"layers": number}, "note": None},
        log_path=f"/srv/builds/{number:05d}/log.txt",
    )


class StoreContract:
    """Behaviour every StudyStore must have. Subclasses provide the ``store`` fixture."""

    @pytest.fixture
    def store(self) -> StudyStore:
        raise NotImplementedError("bind the 'store' fixture to a fresh, writable, empty store")

    # -- study header ----------------------------------------------------------------------
    def test_header_empty_before_init(self, store: StudyStore) -> None:
        """An uninitialised store has an empty config and fingerprint."""
        assert store.config() == {}
        assert store.fingerprint() == {}
        assert not store.readonly

    def test_init_study_round_trip(self, store: StudyStore) -> None:
        """Config and fingerprint round-trip as JSON dicts."""
        config = {"model": "m.onnx", "budgets": {"max_candidates": 10}, "expr": "-a=[on|off]"}
        fp = {"model_sha256": "ab" * 32, "inputs": [["x", "float32", [1, 3]]], "host": "h"}
        store.init_study(config, fp)
        assert store.config() == config
        assert store.fingerprint() == fp

    def test_init_study_twice_is_refused(self, store: StudyStore) -> None:
        """A study is initialised once; a second init raises StoreError."""
        store.init_study({"a": 1}, {"b": 2})
        with pytest.raises(StoreError, match="already initialised"):
            store.init_study({"a": 2}, {"b": 3})
        assert store.config() == {"a": 1}

    def test_set_fingerprint(self, store: StudyStore) -> None:
        """set_fingerprint replaces the fingerprint and keeps the config."""
        with pytest.raises(StoreError, match="not initialised"):
            store.set_fingerprint({"x": 1})
        store.init_study({"a": 1}, {"device": "A100"})
        store.set_fingerprint({"device": "H200"})
        assert store.fingerprint() == {"device": "H200"}
        assert store.config() == {"a": 1}

    # -- meta ------------------------------------------------------------------------------
    def test_meta(self, store: StudyStore) -> None:
        """Meta values round-trip, overwrite, and fall back to the default."""
        assert store.get_meta("status") is None
        assert store.get_meta("status", "none") == "none"
        store.set_meta("status", "running")
        progress = {"done": 3, "total": 10, "current": 4, "phase": "build", "eta_s": 12.5}
        store.set_meta("progress", progress)
        store.set_meta("status", "finished")
        assert store.get_meta("status") == "finished"
        assert store.get_meta("progress") == progress
        store.set_meta("pid", None)
        assert store.get_meta("pid", 5) is None

    def test_meta_rejects_non_json(self, store: StudyStore) -> None:
        """A value that is not JSON-able raises StoreError naming the key."""
        with pytest.raises(StoreError, match="meta 'bad'"):
            store.set_meta("bad", object())
        assert store.get_meta("bad") is None

    # -- candidates ------------------------------------------------------------------------
    def test_candidate_round_trip_exact(self, store: StudyStore) -> None:
        """Every field of a record, samples included, round-trips exactly."""
        record = make_record(3, n_samples=200)
        store.put_candidate(record)
        assert store.candidate(3) == record
        assert store.candidates(with_samples=True) == [record]

    def test_candidates_without_samples(self, store: StudyStore) -> None:
        """candidates() omits raw samples unless asked, everything else is identical."""
        record = make_record(1)
        store.put_candidate(record)
        (listed,) = store.candidates()
        assert listed.samples_ms == ()
        assert listed == record.replace(samples_ms=())

    def test_minimal_record(self, store: StudyStore) -> None:
        """A record with only the required fields round-trips."""
        record = CandidateRecord(number=0, requested_route="")
        store.put_candidate(record)
        assert store.candidate(0) == record
        assert store.candidates(with_samples=True) == [record]

    def test_every_state_round_trips(self, store: StudyStore) -> None:
        """Each CandidateState is stored and read back as the enum member."""
        for i, state in enumerate(CandidateState):
            store.put_candidate(make_record(i, state=state, n_samples=3))
        got = [r.state for r in store.candidates()]
        assert got == list(CandidateState)
        assert all(isinstance(s, CandidateState) for s in got)

    def test_ordered_by_number(self, store: StudyStore) -> None:
        """candidates() is ordered by number regardless of insertion order."""
        for n in (5, 0, 3, 1):
            store.put_candidate(make_record(n, n_samples=2))
        assert [r.number for r in store.candidates()] == [0, 1, 3, 5]

    def test_put_replaces_same_number(self, store: StudyStore) -> None:
        """put_candidate with an existing number replaces the row and its samples."""
        store.put_candidate(make_record(2, state=CandidateState.RUNNING, n_samples=10))
        final = make_record(2, n_samples=0).replace(error="replaced")
        store.put_candidate(final)
        assert store.candidates(with_samples=True) == [final]
        assert store.candidate(2).samples_ms == ()

    def test_missing_candidate_is_none(self, store: StudyStore) -> None:
        """candidate(n) of an unknown number is None."""
        assert store.candidate(42) is None
        assert store.candidates() == []

    def test_non_finite_values(self, store: StudyStore) -> None:
        """inf/NaN in losses, samples and JSON fields round-trip; inf in columns too."""
        record = make_record(0, n_samples=4).replace(
            accuracy=AccuracyResult(metric="l0", losses={"y": math.inf, "z": math.nan}),
            samples_ms=(1.0, math.inf, 0.5, 2.0),
            speedup=math.inf,
            telemetry={"temp_c": math.nan},
        )
        store.put_candidate(record)
        got = store.candidate(0)
        assert got.accuracy.losses["y"] == math.inf
        assert math.isnan(got.accuracy.losses["z"])
        assert got.samples_ms == (1.0, math.inf, 0.5, 2.0)
        assert got.speedup == math.inf
        assert math.isnan(got.telemetry["temp_c"])

    def test_non_json_field_is_refused(self, store: StudyStore) -> None:
        """A record whose JSON fields hold arbitrary objects raises StoreError; nothing stored."""
        with pytest.raises(StoreError, match="candidate 0 extra"):
            store.put_candidate(make_record(0).replace(extra={"x": object()}))
        assert store.candidates() == []

    def test_returned_records_are_snapshots(self, store: StudyStore) -> None:
        """Later writes and mutation of returned dicts do not change stored data."""
        store.put_candidate(make_record(0))
        first = store.candidate(0)
        first.extra["mutated"] = True
        store.put_candidate(make_record(0).replace(error="later"))
        assert first.error is None
        assert "mutated" not in store.candidate(0).extra

    def test_delete_unfinished(self, store: StudyStore) -> None:
        """PENDING/RUNNING rows (left by a kill) are removed and reported; others stay."""
        store.put_candidate(make_record(0))
        store.put_candidate(make_record(1, state=CandidateState.CRASHED))
        store.put_candidate(make_record(2, state=CandidateState.RUNNING))
        store.put_candidate(make_record(3, state=CandidateState.PENDING))
        assert store.delete_unfinished() == [2, 3]
        assert [r.number for r in store.candidates()] == [0, 1]
        assert store.candidate(2) is None
        assert store.delete_unfinished() == []

    # -- events ----------------------------------------------------------------------------
    def test_events(self, store: StudyStore) -> None:
        """Events keep insertion order, increasing ids, timestamps, and filter by kind."""
        store.add_event("baseline", {"median_ms": 1.25})
        store.add_event("force", {"old": {"device": "A"}, "new": {"device": "B"}})
        store.add_event("baseline", {"median_ms": 1.5})
        events = store.events()
        assert [e.kind for e in events] == ["baseline", "force", "baseline"]
        assert events[0].id < events[1].id < events[2].id
        assert all(e.time > 1e9 for e in events)
        assert [e.payload["median_ms"] for e in store.events("baseline")] == [1.25, 1.5]
        assert store.events("none") == []

    # -- lifecycle -------------------------------------------------------------------------
    def test_closed_store_raises(self, store: StudyStore) -> None:
        """Using a closed store raises StoreError (closing twice is fine)."""
        store.close()
        store.close()
        with pytest.raises(StoreError, match="closed"):
            store.candidates()
        with pytest.raises(StoreError, match="closed"):
            store.set_meta("status", "x")
