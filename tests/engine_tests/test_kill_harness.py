"""The kill harness (benchmarks/kill_harness.py), small: SIGKILL real studies, resume, check.

Eight SIGKILLs at random instants (creation, candidates, drift re-measurements, re-validation,
writing the ``--output`` bundle, ``gptuner export``) of real ``gptuner`` subprocesses, and of the
processes of their fork server while the tuner lives (the launcher, the default's, a candidate's); every study
must then finish with ``--continue`` with no completed candidate lost or duplicated, no unusable
folder, no orphan process, drift baselines redone, the output and a verified bundle in place, and
``gptuner show`` never saying "running" once the tuner is dead. The full run
(>= 50 kills) is ``benchmarks/kill_harness.py`` itself (figures in docs/benchmarks.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[2]
#: four routes: one drift baseline (after candidate 2) and a re-validation of the top two
EXPR = "-ort:graph_optimization_level=[all|basic] -ort:intra_op_num_threads=[0|1]"


@pytest.mark.slow
def test_kills_at_random_instants_lose_nothing_and_every_study_finishes(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH"))))}
    out = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/kill_harness.py"), "--kills", "8", "--seed", "12",
         "--grace", "3", "--expr", EXPR, "--work", str(tmp_path / "work"), "--report", str(report)],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )
    assert report.exists(), f"the harness wrote no report (exit {out.returncode}):\n{out.stdout}\n{out.stderr}"
    summary = json.loads(report.read_text(encoding="utf-8"))
    assert summary["kills"] >= 8, out.stdout
    # issue 24: creation and export are armed in every study; a bundle is written only when the
    # verdict names a winner, which a busy machine can leave inconclusive (a timing outcome), so
    # the bundle phase is covered deterministically by test_hostile_folder's partial-bundle tests
    # and by the 50-kill benchmark run (docs/benchmarks.md)
    assert {"creation", "export"} <= set(summary["aims"]), summary["aims"]
    # issue 43: the fork server's processes killed while the tuner lives (the default's, the
    # launcher, any candidate's): each launch must still finish, nothing recorded as the route's
    # crash (the 'infra' column); at a314802 the default's kill ended every study with exit 1
    assert {"default_child", "launcher", "child"} <= set(summary["aims"]), summary["aims"]
    assert summary["failures"] == [], "\n".join(summary["failures"]) + "\n\n" + out.stdout[-4000:]
    assert out.returncode == 0, out.stdout[-4000:]
