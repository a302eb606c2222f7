"""One device, one measuring study: two real tuners on the same CPU take turns (issue 'One
verdict you can trust', item 3). The second waits ('waiting for device'), then measures."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gptuner_core.storage import open_store

from .conftest import FAULTY
from .conftest import QUICK
from .conftest import REPO


def _tune(model, dataset, study, env):
    args = [sys.executable, "-m", "gptuner_core", "tune", str(model), "--backend", FAULTY,
            "--expr", "-fault:sleep_ms=[0|300] -ort:threads=[0|1]", "--search", "full",
            "--dataset", str(dataset), "--batch-size", "4", "--epsilon", "1e-3", "--revalidate-top-k", "0",
            "--drift-every", "0", "--profile-runs", "0", "--study", str(study), "--quiet",
            *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.slow
def test_two_tuners_on_one_device_never_measure_at_once(tmp_path, tiny_model, tiny_dataset):
    env = {**os.environ, "PYTHONPATH": str(REPO), "GPTUNER_LOCK_DIR": str(tmp_path / "locks")}
    a = _tune(tiny_model, tiny_dataset, tmp_path / "a", env)
    b = _tune(tiny_model, tiny_dataset, tmp_path / "b", env)
    for p in (a, b):
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err.decode()
    spans, waited = [], 0
    for name in ("a", "b"):
        with open_store(tmp_path / name, readonly=True) as store:
            recs = store.candidates()
            waited += len(store.events("waiting"))
            assert store.status().value == "finished" and len(recs) == 4
        spans += [(r.started_at, r.finished_at, name) for r in recs]
    spans.sort()
    for (s1, e1, n1), (s2, e2, n2) in zip(spans, spans[1:], strict=False):
        assert s2 >= e1 - 0.05 or n1 == n2, f"{n1} and {n2} measured at once: {(s1, e1)} vs {(s2, e2)}"
    assert waited >= 1  # one of them said it was waiting for the device
