"""Resume after SIGKILL: no completed candidate lost or duplicated; the one in flight re-runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from gptuner_core.records import CandidateState
from gptuner_core.routes import Route
from gptuner_core.storage import open_store

from .conftest import FAULTY
from .conftest import QUICK
from .conftest import REPO


EXPR = "-fault:sleep_ms=[0|100|200|300] -fault:label=[a|b] -ort:threads=[0|1]"


def _tune(study, tiny_model, tiny_dataset, *extra):
    args = [sys.executable, "-m", "gptuner_core", "tune"]
    if "--continue" not in extra:
        args += [str(tiny_model), "--backend", FAULTY, "--expr", EXPR, "--search", "full",
                 "--dataset", str(tiny_dataset), "--batch-size", "4", "--epsilon", "1e-3", "--revalidate-top-k", "0",
                 "--drift-every", "0", "--quiet"]
        args += [f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]
    args += ["--study", str(study), *extra]
    return args


def _finished(study):
    try:
        with open_store(study, readonly=True) as store:
            return [r for r in store.candidates() if r.state.is_finished()]
    except Exception:  # noqa: BLE001 - the store may not exist yet
        return []


class TestResume:
    @pytest.mark.slow
    def test_sigkill_then_continue(self, tmp_path, tiny_model, tiny_dataset):
        """Kill the tuner mid-study with SIGKILL, resume, and compare."""
        study = tmp_path / "study"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen(_tune(study, tiny_model, tiny_dataset), cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        # kill once some candidates are committed, however long a busy machine takes to get there
        # (a time limit here made the outcome depend on the load: 'assert 0 >= 4', issue 24)
        while len(_finished(study)) < 2 and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stdout.read().decode()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = {r.number: r for r in _finished(study)}
        assert len(before) >= 2

        done = subprocess.run(_tune(study, tiny_model, tiny_dataset, "--continue"), cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        with open_store(study, readonly=True) as store:
            after = store.candidates()
            assert store.get_meta("status") == "finished"
        # every route of the space exactly once, all finished, numbers contiguous
        keys = [Route.parse(r.requested_route).key() for r in after]
        assert len(keys) == len(set(keys)) == 16
        assert [r.number for r in after] == list(range(16))
        assert all(r.state.is_finished() for r in after)
        # completed candidates were not re-run: identical records
        for number, rec in before.items():
            assert after[number] == rec
        assert after[0].state is CandidateState.COMPLETE
