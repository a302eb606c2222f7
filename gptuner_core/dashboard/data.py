"""Cached, read-only store readers keyed by ``(study path, file revision)``.

A reader opens the store read-only, so it never blocks the tuner (the single writer). Results
are cached per revision of the store files (``storage.file_revision``: mtime and size of
``study.sqlite`` and its WAL), so a page re-reads only after the tuner committed something.
Snapshots hold frozen records and are never mutated by pages, so they are shared through
``st.cache_resource`` (no per-hit pickling of 10,000 records).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import streamlit as st

from gptuner_core.errors import GptunerError


if TYPE_CHECKING:
    from collections.abc import Callable

    import pandas as pd

    from gptuner_core.records import CandidateRecord

META_KEYS = ("status", "status_message", "pid", "progress", "winner", "health", "knob_db",
             "lineage")


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """A consistent read of one study: header, meta values and candidates (without samples)."""

    path: str
    config: dict[str, Any]
    fingerprint: dict[str, Any]
    meta: dict[str, Any]
    records: tuple[CandidateRecord, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Header:
    """What a list of studies needs: header, meta values and candidate counts (no records)."""

    path: str
    config: dict[str, Any]
    fingerprint: dict[str, Any]
    meta: dict[str, Any]
    state_counts: dict[str, int]
    best_ms: float | None = None  # the lowest median latency among passing candidates

    @property
    def n_finished(self) -> int:
        from gptuner_core.records import CandidateState

        return sum(n for s, n in self.state_counts.items() if CandidateState(s).is_finished())


@st.cache_resource(max_entries=64, ttl=3600, show_spinner=False)
def _derived(name: str, path: str, rev: tuple[int, ...], args: tuple[Any, ...],
             _build: Callable[[], Any]) -> Any:
    return _build()


def derived(name: str, study_dir: str | Path, args: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """``build()`` once per store revision of the study and ``args`` (hashable): the figures and
    frames a page would otherwise rebuild on every rerun (plotly figures cost 0.1-0.3 s each).
    Callers must not mutate the result."""
    path = str(Path(study_dir))
    return _derived(name, path, revision(path), args, build)


def revision(study_dir: str | Path) -> tuple[int, ...]:
    from gptuner_core.storage import file_revision

    return file_revision(study_dir)


@st.cache_resource(max_entries=64, ttl=3600, show_spinner=False)
def _snapshot(path: str, rev: tuple[int, ...]) -> Snapshot:
    from gptuner_core.storage import open_store

    with open_store(path, readonly=True) as store:
        return Snapshot(
            path=path,
            config=dict(store.config()),
            fingerprint=dict(store.fingerprint()),
            meta={k: store.get_meta(k) for k in META_KEYS},
            records=tuple(store.candidates(with_samples=False)),
        )


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def study_facts(path: str, rev: tuple[int, ...]) -> Any:
    """What ``gptuner_core.explain`` needs (``StudyFacts``), from the revision's snapshot: no
    second read of the store (the explain views use no raw samples)."""
    from gptuner_core.explain.study import StudyFacts
    from gptuner_core.knobs import KnobDatabase

    snap = _snapshot(path, rev)
    db = snap.meta.get("knob_db")
    defaults = {k.name: k.default for k in KnobDatabase.from_json(db)} if db else {}
    return StudyFacts(records=snap.records, defaults=defaults,
                      expression=str(snap.config.get("expression") or ""),
                      winner=(snap.meta.get("winner") or {}).get("number"), config=snap.config)


@st.cache_resource(max_entries=256, ttl=3600, show_spinner=False)
def _header(path: str, rev: tuple[int, ...]) -> Header:
    from gptuner_core.storage import open_store

    with open_store(path, readonly=True) as store:
        return Header(path=path, config=dict(store.config()), fingerprint=dict(store.fingerprint()),
                      meta={k: store.get_meta(k) for k in META_KEYS}, state_counts=store.state_counts(),
                      best_ms=store.best_median_ms())


def header(study_dir: str | Path) -> Header:
    """The study's header and counts, without reading its candidates (the Overview's list of
    every study in the workspace); raises StoreError for an unreadable study."""
    path = str(Path(study_dir))
    return _header(path, revision(path))


def snapshot(study_dir: str | Path) -> Snapshot:
    """The latest snapshot of a study (raises StoreError for an unreadable study)."""
    path = str(Path(study_dir))
    return _snapshot(path, revision(path))


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def _frame(path: str, rev: tuple[int, ...]) -> pd.DataFrame:
    from gptuner_core import views

    return views.candidates_frame(_snapshot(path, rev).records)


def frame(study_dir: str | Path) -> pd.DataFrame:
    """The candidates DataFrame of a study (callers must not mutate it; views copy)."""
    path = str(Path(study_dir))
    return _frame(path, revision(path))


@st.cache_resource(max_entries=256, ttl=3600, show_spinner=False)
def _candidate(path: str, rev: tuple[int, ...], number: int) -> CandidateRecord | None:
    from gptuner_core.storage import open_store

    with open_store(path, readonly=True) as store:
        return store.candidate(number)


def candidate(study_dir: str | Path, number: int) -> CandidateRecord | None:
    """One candidate with its raw samples."""
    path = str(Path(study_dir))
    return _candidate(path, revision(path), int(number))


@st.cache_resource(ttl=600, show_spinner=False)
def current_environment(backend: str) -> dict[str, str]:
    """This machine's fingerprint parts for ``backend`` (empty when it cannot run here)."""
    env: dict[str, str] = {"host": socket.gethostname()}
    try:
        if _heavy(backend):  # torch: never imported in the server
            from gptuner_core.backends.probe import environment

            raw = environment(backend)
        else:
            from gptuner_core.backends import get_backend

            raw = get_backend(backend).environment()
    except (GptunerError, ImportError):
        return env
    env.update({k: str(v) for k, v in raw.items() if k in ("backend_version", "device", "driver", "runtime", "cpu_features")})
    return env


@st.cache_resource(max_entries=64, ttl=3600, show_spinner=False)
def backend_repro(backend: str, model: str, route: str) -> dict[str, str]:
    """The backend's own reproduce commands for ``route`` (``Backend.repro``); a heavy backend's
    (torch) from a child process. Raises GptunerError or ImportError when it cannot say."""
    if _heavy(backend):
        from gptuner_core.backends.probe import repro

        return repro(backend, model, route)
    from gptuner_core.backends import get_backend
    from gptuner_core.routes import Route

    return get_backend(backend, {}).repro(Path(model), Route.parse(route))


@st.cache_data(max_entries=64, show_spinner=False)
def _file_sha256(path: str, mtime_ns: int) -> str:
    from gptuner_core.fingerprint import file_sha256

    return file_sha256(path)


def model_sha256(model: str) -> str | None:
    p = Path(model)
    if not p.is_file():
        return None
    return _file_sha256(str(p), p.stat().st_mtime_ns)


@st.cache_resource(ttl=300, show_spinner=False)
def backends() -> list[tuple[str, Any]]:
    """``[(name, Availability)]`` for every registered backend."""
    from gptuner_core.backends import available_backends

    return available_backends()


@st.cache_resource(max_entries=16, show_spinner="Asking the backend about the model…")
def _model_facts(backend: str, model: str, mtime_ns: int) -> Any:
    """``ModelFacts`` from a child process (a heavy framework never loads in the server)."""
    from gptuner_core.backends.probe import model_facts

    return model_facts(backend, model)


def _heavy(backend: str) -> bool:
    from gptuner_core.backends import backend_class

    return bool(getattr(backend_class(backend), "heavy_import", False))


@st.cache_resource(max_entries=16, show_spinner="Reading the knob database…")
def knob_database(backend: str, model: str, mtime_ns: int) -> Any:
    """The backend's knob database for ``model`` (``KnobDatabase``); a backend whose framework
    is heavy to import (torch) answers from a child process."""
    if _heavy(backend):
        return _model_facts(backend, model, mtime_ns).knob_db
    from gptuner_core.backends import get_backend

    return get_backend(backend).describe(Path(model))


@st.cache_resource(max_entries=64, ttl=3600, show_spinner=False)
def _events(path: str, rev: tuple[int, ...], kind: str) -> tuple[dict[str, Any], ...]:
    from gptuner_core.storage import open_store

    with open_store(path, readonly=True) as store:
        return tuple({**e.payload, "time": e.payload.get("time", e.time)} for e in store.events(kind))


def events(study_dir: str | Path, kind: str) -> tuple[dict[str, Any], ...]:
    """Payloads of the study's events of one kind (``baseline``, ``revalidation``...)."""
    path = str(Path(study_dir))
    return _events(path, revision(path), kind)


@st.cache_resource(max_entries=16, ttl=3600, show_spinner=False)
def _health(path: str, rev: tuple[int, ...]) -> Any:
    from gptuner_core.measurement import health_summary
    from gptuner_core.storage import open_store

    with open_store(path, readonly=True) as store:
        return health_summary(store.candidates(), store.events("baseline"))


def health(study_dir: str | Path) -> Any:
    """The study's measurement health now (a ``HealthSummary``: tiles, drift chart points and
    warnings from one computation over the current records and baselines)."""
    path = str(Path(study_dir))
    return _health(path, revision(path))


@st.cache_resource(max_entries=16, show_spinner=False)
def input_specs(backend: str, model: str, mtime_ns: int) -> Any:
    """The backend's input specs for ``model`` (``list[TensorSpec]``; a heavy backend's from a
    child process, as :func:`knob_database`)."""
    if _heavy(backend):
        return list(_model_facts(backend, model, mtime_ns).input_specs)
    from gptuner_core.backends import get_backend

    return get_backend(backend).input_specs(Path(model))


@st.cache_resource(max_entries=32, ttl=3600, show_spinner=False)
def _ranked(path: str, rev: tuple[int, ...], epsilon: float | None, metric: str,
            task_metric: str | None, max_drop: float | None) -> pd.DataFrame:
    from gptuner_core import views

    snap = _snapshot(path, rev)
    return views.apply_epsilon(_frame(path, rev), snap.records, epsilon, metric=metric,
                               task_metric=task_metric, max_drop=max_drop)


def ranked(study_dir: str | Path, epsilon: float | None, *, metric: str = "l2",
           task_metric: str | None = None, max_drop: float | None = None) -> pd.DataFrame:
    """The candidates frame with the gate applied at ``epsilon`` (cached per store revision and
    ε; callers must not mutate it)."""
    path = str(Path(study_dir))
    return _ranked(path, revision(path), epsilon, metric, task_metric, max_drop)
