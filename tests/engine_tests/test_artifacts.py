"""Disk: --keep-artifacts, duplicates without a copy, compact gate outputs, disk use shown, and
pruned artifacts rebuilt from their route (re-validation after --continue, after a kill).

Real studies of the bundled MLP sample on ONNX Runtime, through the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from gptuner_core.cli import main
from gptuner_core.engine.files import artifacts
from gptuner_core.records import CandidateState
from gptuner_core.storage import open_store

from .conftest import QUICK
from .conftest import REPO


pytestmark = pytest.mark.slow

# op_types=all quantizes the same nodes as compute on an MLP: a canonical duplicate
EXPR = "-quant:mode=[off|dynamic|qdq] -quant:op_types=[compute|all] -quant:reduce_range=on"


@pytest.fixture(autouse=True, scope="module")
def own_device_lock(tmp_path_factory):
    """This module's studies take turns on a lock of their own: what they test is the folder,
    not waiting for whatever else measures on this machine."""
    mp = pytest.MonkeyPatch()
    mp.setenv("GPTUNER_LOCK_DIR", str(tmp_path_factory.mktemp("locks")))
    yield
    mp.undo()


def tune_args(study, *extra: str) -> list[str]:
    return [
        "tune", str(REPO / "assets/mlp_digits.onnx"), "--backend", "onnxruntime",
        "--dataset", str(REPO / "assets/mlp_digits_eval.npz"), "--expr", EXPR, "--search", "full",
        "--metric", "cos", "--epsilon", "0.05", "--batch-size", "8", "--profile-runs", "0",
        "--revalidate-top-k", "1", "--revalidate-rounds", "2", "--drift-every", "0",
        "--study", str(study), "--quiet", *extra,
    ] + [f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]


def with_builds(study) -> set[int]:
    return set(artifacts.disk_use(study).with_artifacts)


def records(study):
    with open_store(study, readonly=True) as store:
        return store.candidates(), store.winner(), store.get_meta("disk_use")


@pytest.fixture(scope="module")
def default_study(tmp_path_factory):
    study = tmp_path_factory.mktemp("keep") / "study"
    assert main(tune_args(study)) == 0
    return study


def test_default_keeps_only_the_default_and_the_contenders(default_study):
    recs, winner, disk = records(default_study)
    from gptuner_core.engine.decide.verdict import contenders

    top = {r.number for r in contenders(recs)[:1]}
    assert with_builds(default_study) == {0} | top | {winner.number}
    for rec in recs:  # the gate's outputs were read once: none stays (golden.npz holds the default's)
        assert not (default_study / "candidates" / f"{rec.number:05d}" / "outputs.npz").exists()
    assert (default_study / "golden.npz").exists()
    assert disk["total"] > 0 and disk["peak"] >= disk["total"]


def test_duplicates_keep_no_copy(default_study):
    recs, _, _ = records(default_study)
    by_number = {r.number: r for r in recs}
    dupes = [r for r in recs if r.state is CandidateState.DUPLICATE]
    assert dupes, [(r.number, r.state.value, r.requested_route) for r in recs]
    for dup in dupes:
        folder = default_study / "candidates" / f"{dup.number:05d}"
        assert not list(artifacts.build_outputs(folder)), list(folder.iterdir())
        assert dup.artifact_path == by_number[dup.duplicate_of].artifact_path


def test_show_prints_the_disk_use(default_study, capsys):
    assert main(["show", str(default_study)]) == 0
    out = capsys.readouterr().out
    assert "disk: " in out and "--keep-artifacts top-k" in out and "peak" in out


def test_all_keeps_every_distinct_artifact_and_compressed_outputs(tmp_path):
    study = tmp_path / "all"
    assert main(tune_args(study, "--keep-artifacts", "all")) == 0
    recs, _, _ = records(study)
    built = {r.number for r in recs if r.state is not CandidateState.DUPLICATE and r.artifact_sha256}
    assert with_builds(study) == built
    measured = next(r for r in recs if r.number != 0 and r.state is CandidateState.COMPLETE)
    out = study / "candidates" / f"{measured.number:05d}" / "outputs.npz"
    import zipfile

    with zipfile.ZipFile(out) as z:
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())


def test_bad_keep_artifacts_is_one_line(tmp_path, capsys):
    from gptuner_core.config import StudyConfig
    from gptuner_core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--keep-artifacts must be one of \['best', 'top-k', 'all'\] \(got 'some'\)"):
        StudyConfig(model="m.onnx", keep_artifacts="some")
    assert StudyConfig(model="m.onnx", keep_artifacts=True).keep_artifacts == "all"  # older study.json
    assert StudyConfig(model="m.onnx", keep_artifacts=False).keep_artifacts == "best"
    assert main(["tune", "m.onnx", "--study", str(tmp_path / "s"), "--keep-artifacts", "x"]) != 0
    assert not (tmp_path / "s").exists()


def test_revalidation_after_pruning_rebuilds_from_the_route(tmp_path):
    """best: only the default's and the winner's stay; --continue re-validates the top two
    contenders, so a pruned one is rebuilt from its route, in place, and measured."""
    study = tmp_path / "best"
    assert main(tune_args(study, "--keep-artifacts", "best")) == 0
    recs, winner, _ = records(study)
    from gptuner_core.engine.decide.verdict import contenders

    assert with_builds(study) == {0, winner.number} | ({winner.best} if winner.best is not None else set())
    top2 = [r.number for r in contenders(recs)[:2]]
    pruned = [n for n in top2 if n not in with_builds(study)]
    assert pruned, (top2, with_builds(study))
    with open_store(study, readonly=True) as store:  # continued with two contenders this time
        cfg = dict(store.config())
    cfg["revalidate_top_k"] = 2
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.loop.tuner import Tuner

    summary = Tuner(StudyConfig.from_json(cfg), study, resume=True).run()
    assert summary.winner is not None and summary.winner.verdict.value != "revalidation-failed", summary.message
    with open_store(study, readonly=True) as store:
        last = store.events("revalidation")[-1].payload
    assert "error" not in last, last
    logs = [p.read_text() for p in (study / "revalidation").rglob("log.txt")]
    assert any("rebuilding pruned artifact" in t for t in logs)


def test_continue_after_a_kill(tmp_path):
    """A tuner killed (SIGKILL) mid-study: --continue finishes it, with the kept set right."""
    study = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "gptuner_core", *tune_args(study)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if (study / "candidates" / "00003").exists():
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert main(["tune", "--continue", "--study", str(study), "--quiet"]) == 0
    recs, winner, _ = records(study)
    from gptuner_core.engine.decide.verdict import contenders

    assert all(r.state.is_finished() for r in recs)
    assert with_builds(study) == {0, winner.number} | {r.number for r in contenders(recs)[:1]}


def test_profile_and_pairwise_of_a_pruned_candidate_rebuild_it(default_study, capsys):
    """explain's profile_candidate and 'gptuner revalidate A B' on a pruned candidate rebuild it."""
    from gptuner_core.explain import profile_candidate

    recs, _, _ = records(default_study)
    pruned = [r.number for r in recs if r.state is CandidateState.COMPLETE
              and r.number in artifacts.disk_use(default_study).pruned]
    assert len(pruned) >= 1, [(r.number, r.state.value) for r in recs]
    assert profile_candidate(default_study, pruned[0], runs=5).is_file()
    assert pruned[0] in with_builds(default_study)
    if len(pruned) > 1:
        # 2 rounds may not decide (exit 3): what matters is the pruned candidate measured again
        assert main(["revalidate", str(default_study), "0", str(pruned[1]), "--max-rounds", "2"]) in (0, 3)
        from gptuner_core.engine.decide.pairwise import latest_comparison

        stored = latest_comparison(default_study, 0, pruned[1])
        assert stored is not None and stored.verdict != "failed" and stored.rounds == 2, stored
        assert pruned[1] in with_builds(default_study)
