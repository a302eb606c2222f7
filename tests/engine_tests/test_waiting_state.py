"""Issue 25, item 4: waiting for the device is a state. Quoted: a study started while another held
cpu0 ended "finished after 0 candidates in 191.5 s / time budget reached (180 s)", exit 0, its
only trace an event row; Stop while waiting took 45 s. Real tuners, a real lock held by this test
process as "study X" (the other study)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

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


def _env(tmp_path):
    return {**os.environ, "PYTHONPATH": str(REPO), "GPTUNER_LOCK_DIR": str(tmp_path / "locks")}


def _other_study(tmp_path) -> DeviceLock:
    (tmp_path / "locks").mkdir(exist_ok=True)
    lock = DeviceLock(measuring_devices("cpu"), study="X", directory=tmp_path / "locks")
    assert lock.acquire(timeout=5)
    return lock


def test_waiting_is_said_and_not_counted_against_the_time_budget(tmp_path, tiny_model, tiny_dataset):
    lock = _other_study(tmp_path)
    release = threading.Timer(4.0, lock.release)  # the other study holds the CPU longer than the budget
    release.start()
    try:
        proc = _tune(tiny_model, tiny_dataset, tmp_path / "s", _env(tmp_path), "--time-budget", "2")
        out, err = proc.communicate(timeout=180)
    finally:
        release.join()
    assert proc.returncode == 0, err
    assert "waiting for device cpu" in err and "held by study X since " in err  # the CLI says so
    with open_store(tmp_path / "s", readonly=True) as store:
        recs, progress, winner = store.candidates(), store.progress(), store.winner()
        assert store.status().value == "finished"
    assert len(recs) >= 1  # the wait did not spend the budget
    assert progress.waited_s > 0 and progress.elapsed_s < progress.waited_s + progress.elapsed_s
    assert "waiting for the device, not counted against --time-budget" in out
    assert winner is not None and progress.best_speedup == winner.speedup  # the verdict's number


def test_device_wait_bounds_the_wait_and_never_ends_finished(tmp_path, tiny_model, tiny_dataset):
    lock = _other_study(tmp_path)
    try:
        proc = _tune(tiny_model, tiny_dataset, tmp_path / "s", _env(tmp_path), "--device-wait", "1",
                     "--time-budget", "1")
        out, err = proc.communicate(timeout=120)
    finally:
        lock.release()
    assert proc.returncode == 1, out + err
    with open_store(tmp_path / "s", readonly=True) as store:
        assert store.status().value == "failed" and store.candidates() == []
        message = store.get_meta("status_message")
    assert "--device-wait 1 s" in message and "held by study X" in message


def test_stop_while_waiting_acts_at_once(tmp_path, tiny_model, tiny_dataset):
    """The lock stays held for the whole test: a stop that waited for it would never end."""
    from gptuner_core.engine.process.launch import request_stop

    lock = _other_study(tmp_path)
    try:
        proc = _tune(tiny_model, tiny_dataset, tmp_path / "s", _env(tmp_path))
        for _ in range(600):
            if (tmp_path / "s" / "study.sqlite").is_file():
                with open_store(tmp_path / "s", readonly=True) as store:
                    if store.status() is not None and store.status().value == "waiting":
                        break
            time.sleep(0.1)
        request_stop(tmp_path / "s")
        out, err = proc.communicate(timeout=60)
    finally:
        lock.release()
    with open_store(tmp_path / "s", readonly=True) as store:
        assert store.status().value == "stopped", out + err
        assert "stopped on request while waiting for the device" in store.get_meta("status_message")
