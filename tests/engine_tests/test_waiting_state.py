"""Issue 25, item 4: waiting for the device is a state. Quoted: a study started while another held
cpu0 ended "finished after 0 candidates in 191.5 s / time budget reached (180 s)", exit 0, its
only trace an event row; Stop while waiting took 45 s. Real tuners, a real lock held by this test
process as "study X" (the other study)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from gptuner_core.device_lock import DeviceLock
from gptuner_core.device_lock import measuring_devices
from gptuner_core.storage import open_store

from .conftest import FAULTY
from .conftest import QUICK
from .conftest import REPO


def _tune(model, dataset, study, env, *extra: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "gptuner_core", "tune", str(model), "--backend", FAULTY,
            "--expr", "-ort:threads=[0|1]", "--search", "full", "--dataset", str(dataset),
            "--batch-size", "4", "--epsilon", "1e-3", "--revalidate-top-k", "0", "--drift-every", "0",
            "--profile-runs", "0", "--study", str(study),
            *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()], *extra]
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _env(locks):
    return {**os.environ, "PYTHONPATH": str(REPO), "GPTUNER_LOCK_DIR": str(locks)}


def _other_study(locks) -> DeviceLock:
    locks.mkdir(exist_ok=True)
    lock = DeviceLock(measuring_devices("cpu"), study="X", directory=locks)
    assert lock.acquire(timeout=5)
    return lock


def _status(study) -> str | None:
    if not (study / "study.sqlite").is_file():
        return None
    with open_store(study, readonly=True) as store:
        status = store.status()
    return status.value if status is not None else None


@pytest.mark.slow
def test_waiting_is_a_state(tmp_path, tiny_model, tiny_dataset):
    """Three real tuners at once (the wall time of one): A waits for a device held 4 s, longer
    than its 2 s time budget; B gives up after --device-wait 1; C is stopped while it waits.
    B's and C's device stays held throughout: a wait that ignored the bound or the stop would
    never end."""
    from gptuner_core.engine.process.launch import request_stop

    lock_a, lock_bc = _other_study(tmp_path / "locks_a"), _other_study(tmp_path / "locks_bc")
    try:
        a = _tune(tiny_model, tiny_dataset, tmp_path / "a", _env(tmp_path / "locks_a"), "--time-budget", "2")
        b = _tune(tiny_model, tiny_dataset, tmp_path / "b", _env(tmp_path / "locks_bc"),
                  "--device-wait", "1", "--time-budget", "1")
        c = _tune(tiny_model, tiny_dataset, tmp_path / "c", _env(tmp_path / "locks_bc"))
        waiting: dict[str, float] = {}
        for _ in range(1200):  # A is let go 2.5 s into its wait (beyond its 2 s budget); C stopped
            now = time.monotonic()
            for name in ("a", "c"):
                if name not in waiting and _status(tmp_path / name) == "waiting":
                    waiting[name] = now
                    if name == "c":
                        request_stop(tmp_path / "c")
            if "a" in waiting and now - waiting["a"] >= 2.5 and lock_a.locked:
                lock_a.release()
            if "c" in waiting and not lock_a.locked:
                break
            time.sleep(0.1)
        (out_a, err_a), (out_b, err_b), (out_c, err_c) = (p.communicate(timeout=180) for p in (a, b, c))
    finally:
        lock_a.release()
        lock_bc.release()

    # A: the CLI said who held the device since when; the wait did not spend the time budget
    assert a.returncode == 0, err_a
    assert "waiting for device cpu" in err_a and "held by study X since " in err_a
    assert "waiting for the device, not counted against --time-budget" in out_a
    with open_store(tmp_path / "a", readonly=True) as store:
        assert store.status().value == "finished" and len(store.candidates()) >= 1
        progress, winner = store.progress(), store.winner()
    assert progress.waited_s > 0
    assert winner is not None and progress.best_speedup == winner.speedup  # the verdict's number

    # B: --device-wait bounds the wait; it fails naming the holder, never "finished" with nothing
    assert b.returncode == 1, out_b + err_b
    with open_store(tmp_path / "b", readonly=True) as store:
        assert store.status().value == "failed" and store.candidates() == []
        message = store.get_meta("status_message")
    assert "--device-wait 1 s" in message and "held by study X" in message

    # C: Stop acts at once while waiting
    with open_store(tmp_path / "c", readonly=True) as store:
        assert store.status().value == "stopped", out_c + err_c
        assert "stopped on request while waiting for the device" in store.get_meta("status_message")
