"""Suite-wide set-up: every pytest process is hermetic, so ``./dev.sh test`` can run the suite in
pytest-xdist workers (``-n 4``; see docs/ci.md).

* Device locks: each pytest process (each xdist worker) measures under its own
  ``GPTUNER_LOCK_DIR``. With the per-user default, every worker's study would hold the same
  ``cpu0``/``cpu1`` locks and the workers would measure one at a time (and wait on any study the
  developer runs beside the suite). Tests of the lock itself set their own directory, as before.
* Scheduling (:func:`pytest_xdist_make_scheduler`): a test file is one unit of work, so its
  module fixtures run once; the files that share an expensive session fixture of their folder's
  conftest (a real tuned study) are one unit (:data:`SHARED_UNITS`), so that study is tuned once,
  not once per worker. Units are handed out heaviest first (browser tests, then slow ones), so no
  long unit starts last and runs alone. (xdist's own ``--dist loadgroup`` would do the grouping,
  but it renames ``item._nodeid``, which pytest 9 no longer reads.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


TESTS = Path(__file__).resolve().parent

#: session fixture (``folder/conftest.py::name``) that tunes a real study -> the test files that use
#: it, run as one unit in one worker (a session fixture runs once per worker)
SHARED_UNITS = {
    "explain_tests/conftest.py::cnn_study": frozenset({
        "tests/explain_tests/test_cli_explain.py",
        "tests/explain_tests/test_explain_page.py",
        "tests/explain_tests/test_explain_study.py",
    }),
    "pipeline_tests/conftest.py::study": frozenset({
        "tests/pipeline_tests/test_bundle.py",
        "tests/pipeline_tests/test_gate.py",
        "tests/pipeline_tests/test_hostile_folder.py",
        "tests/pipeline_tests/test_one_verdict.py",
        "tests/pipeline_tests/test_report.py",
        "tests/pipeline_tests/test_retune.py",
    }),
}

#: how long a test of each kind tends to take, relative to a plain one, for the hand-out order
_WEIGHTS = (("browser", 40.0), ("slow", 5.0))


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its shared fixture's unit, else its file."""
    path = nodeid.split("::", 1)[0]
    return next((key for key, files in SHARED_UNITS.items() if path in files), path)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: the suite still runs without it
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN001, ANN201
    """Units of :func:`unit_of`, in collection order (heaviest first, see below), for the
    load-balancing modes; ``--dist each`` and the like keep xdist's own scheduler."""
    if config.getvalue("dist") not in ("load", "loadfile", "loadgroup", "loadscope"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False
    return UnitScheduling(config, log)


@pytest.fixture(scope="session", autouse=True)
def _own_device_lock_dir(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN202
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPTUNER_LOCK_DIR", str(tmp_path_factory.mktemp("device_locks")))
        yield


def _shared_fixture(item: pytest.Item) -> str | None:
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        for fd in defs:
            code = getattr(getattr(fd, "func", None), "__code__", None)
            if fd.scope != "session" or code is None:
                continue
            try:
                key = f"{Path(code.co_filename).resolve().relative_to(TESTS).as_posix()}::{fd.argname}"
            except ValueError:
                continue
            if key in SHARED_UNITS:
                return key
    return None


def _weight(item: pytest.Item) -> float:
    return next((w for name, w in _WEIGHTS if item.get_closest_marker(name)), 1.0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: check that every user of a shared study is in its unit, and order the
    units heaviest first (the order the scheduler hands them out in)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    weight: dict[str, float] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        unit = unit_of(item.nodeid)
        shared = _shared_fixture(item)
        if shared is not None and unit != shared:
            msg = f"{item.nodeid} uses the shared session fixture {shared}: add its file to SHARED_UNITS in tests/conftest.py"
            raise pytest.UsageError(msg)
        weight[unit] = weight.get(unit, 0.0) + _weight(item)
        first.setdefault(unit, i)
    order = {id(item): i for i, item in enumerate(items)}
    items.sort(key=lambda it: (-weight[unit_of(it.nodeid)], first[unit_of(it.nodeid)], order[id(it)]))
