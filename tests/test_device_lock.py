"""One device, one measuring study: real processes contend for a device lock.

Two real Python processes share a lock directory: the second waits, sees who holds the device
("waiting for device ... (held by study A, pid P)") and measures only after the first let go. A
holder killed with SIGKILL leaves its file behind, which never blocks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gptuner_core.device_lock import DeviceLock
from gptuner_core.device_lock import LockHolder
from gptuner_core.device_lock import busy
from gptuner_core.device_lock import lock_dir
from gptuner_core.device_lock import measuring_devices
from gptuner_core.device_lock import read_holder
from gptuner_core.errors import ConfigError
from gptuner_core.errors import DeviceBusyError


ROOT = Path(__file__).resolve().parents[1]

#: a "study": takes the devices, reports when, holds them until the file argv[3] exists (the test
#: says when: a hold of fixed seconds raced the other process's start on a busy machine, issue
#: 41), releases, reports; each wait is reported when it happens
STUDY = """
import json, os, sys, time
from gptuner_core.device_lock import DeviceLock
lock = DeviceLock(sys.argv[2].split(","), study=sys.argv[1])
waits = []
def on_wait(w):
    waits.append(w.message)
    print(json.dumps({"event": "waiting", "message": w.message}), flush=True)
lock.acquire(on_wait=on_wait)
print(json.dumps({"event": "acquired", "t": time.time(), "waits": waits}), flush=True)
end = time.monotonic() + 120
while not os.path.exists(sys.argv[3]) and time.monotonic() < end:
    time.sleep(0.02)
t1 = time.time()
lock.release()
print(json.dumps({"event": "released", "t": t1}), flush=True)
"""


def start(study: str, devices: str, lock_dir: Path) -> tuple[subprocess.Popen, Path]:
    """The study process and the file whose creation makes it release its devices."""
    env = dict(os.environ, GPTUNER_LOCK_DIR=str(lock_dir),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    release = lock_dir / f"release-{study.replace('/', '_')}"
    proc = subprocess.Popen([sys.executable, "-c", STUDY, study, devices, str(release)],
                            stdout=subprocess.PIPE, text=True, env=env)
    return proc, release


def next_event(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()
    assert line, f"the study process ended (exit {proc.wait(timeout=10)}) without another event"
    return json.loads(line)


def wait_for_holder(device: str, directory: Path, timeout: float = 20.0) -> LockHolder:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        holder = read_holder(device, directory)
        if holder is not None and holder.pid:
            return holder
        time.sleep(0.05)
    raise AssertionError(f"nobody took {device} within {timeout} s")


def events(proc: subprocess.Popen, release: Path) -> list[dict]:
    release.touch()
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    return [json.loads(line) for line in out.splitlines()]


def test_second_study_waits_then_gets_the_device(tmp_path: Path) -> None:
    """Study B starts while A holds cpu0: B reports A's study and pid, acquires only after A
    released, and holds it afterwards."""
    a, release_a = start("studies/A", "cpu0", tmp_path)
    holder = wait_for_holder("cpu0", tmp_path)
    assert (holder.study, holder.pid) == ("studies/A", a.pid)
    b, release_b = start("studies/B", "cpu0", tmp_path)
    assert next_event(b)["event"] == "waiting"  # B is waiting on A: now A lets go
    ev_a = events(a, release_a)
    acquired_b = next_event(b)
    ev_b = events(b, release_b)
    released_a = next(e["t"] for e in ev_a if e["event"] == "released")
    assert acquired_b["event"] == "acquired" and ev_b[-1]["event"] == "released"
    assert acquired_b["t"] >= released_a
    assert acquired_b["waits"] == [f"waiting for device cpu0, held by study studies/A since {time.strftime('%H:%M', time.localtime(holder.since))} (pid {a.pid})"]
    assert read_holder("cpu0", tmp_path) is None


def test_busy_names_the_holder_of_a_backend_device(tmp_path: Path) -> None:
    """busy('cpu') lists who holds any core of this process's CPU set (for the New-run warning)."""
    assert busy("cpu", tmp_path) == ()
    lock = DeviceLock(measuring_devices("cpu")[:1], study="studies/A", directory=tmp_path)
    with lock.held():
        (holder,) = busy("cpu", tmp_path)
        assert (holder.study, holder.pid) == ("studies/A", os.getpid())
    assert busy("cpu", tmp_path) == ()


def test_overlapping_cpu_sets_wait_disjoint_ones_do_not(tmp_path: Path) -> None:
    """A holds cpu0+cpu1: a study on cpu1 waits, a study on cpu7 does not."""
    a, release_a = start("A", "cpu0,cpu1", tmp_path)
    wait_for_holder("cpu1", tmp_path)
    free = DeviceLock(["cpu7"], study="C", directory=tmp_path)
    assert free.acquire(timeout=0)
    free.release()
    busy = DeviceLock(["cpu1", "cpu2"], study="B", directory=tmp_path)
    assert not busy.acquire(timeout=0.2)
    assert set(busy.holders()) == {"cpu1"}
    assert read_holder("cpu2", tmp_path) is None  # all-or-nothing: cpu2 was not kept
    events(a, release_a)
    assert busy.acquire(timeout=5)
    busy.release()


def test_a_killed_holder_never_blocks(tmp_path: Path) -> None:
    """SIGKILL the holder: its file and record remain, the device reads free and is taken at once."""
    a, _ = start("A", "gpu-test", tmp_path)
    wait_for_holder("gpu-test", tmp_path)
    os.kill(a.pid, signal.SIGKILL)
    a.wait(timeout=10)
    assert (tmp_path / "gpu-test.lock").read_text()  # the dead holder's record is still there
    assert read_holder("gpu-test", tmp_path) is None
    lock = DeviceLock(["gpu-test"], study="B", directory=tmp_path)
    assert lock.acquire(timeout=0)
    assert read_holder("gpu-test", tmp_path).study == "B"
    lock.release()


def test_held_times_out_with_a_clear_error_and_holders_are_readable_in_process(tmp_path: Path) -> None:
    """Within one process a second lock on the same device is refused (flock, not lockf: a status
    read does not drop the holder's lock); held() names the holder after the timeout."""
    first = DeviceLock(["cpu0"], study="A", directory=tmp_path)
    with first.held():
        assert read_holder("cpu0", tmp_path).pid == os.getpid()
        assert read_holder("cpu0", tmp_path).pid == os.getpid()  # reading twice keeps it
        with pytest.raises(DeviceBusyError, match=r"still busy after 0.1 s \(waiting for device cpu0, held by study A since \d\d:\d\d"):
            with DeviceLock(["cpu0"], study="B", directory=tmp_path).held(timeout=0.1):
                pass
    assert read_holder("cpu0", tmp_path) is None


def test_names_and_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU locks are per core of the affinity set; GPUs need cuda[:N]; env overrides the dir."""
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(tmp_path / "locks"))
    assert lock_dir() == tmp_path / "locks" and (tmp_path / "locks").is_dir()
    assert measuring_devices("cpu") == tuple(f"cpu{c}" for c in sorted(os.sched_getaffinity(0)))
    assert measuring_devices("cuda:0")[0].startswith("gpu")
    with pytest.raises(ConfigError, match="'cpu' or 'cuda"):
        measuring_devices("tpu")
    with pytest.raises(ConfigError, match="letters, digits"):
        DeviceLock(["../etc"], study="x", directory=tmp_path)
