"""'Is A faster than B?': interleaved rounds for exactly two candidates, stored with the study."""

from __future__ import annotations

import json

from gptuner_core.cli import main
from gptuner_core.storage import open_store

from .conftest import FAULTY
from .conftest import QUICK


def test_revalidate_two_candidates_and_store_the_result(tmp_path, tiny_model, tiny_dataset, capsys):
    study = tmp_path / "study"
    assert main(["tune", str(tiny_model), "--backend", FAULTY, "--expr", "-fault:call_ms=[0|40]",
                 "--dataset", str(tiny_dataset), "--batch-size", "4", "--epsilon", "1e-3", "--revalidate-top-k", "0",
                 "--drift-every", "0", "--study", str(study), "--quiet", "--profile-runs", "0",
                 *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]) == 0
    capsys.readouterr()
    code = main(["revalidate", str(study), "0", "1", "--max-rounds", "4"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith("#1 vs #0: not_faster:")  # 40 ms per call is far slower
    with open_store(study, readonly=True) as store:
        (event,) = store.events("pairwise")
    assert event.payload["reference"] == 0 and event.payload["candidate"] == 1


def test_bad_candidates_are_one_line(tmp_path, tiny_model, tiny_dataset, capsys):
    study = tmp_path / "study"
    assert main(["tune", str(tiny_model), "--backend", FAULTY, "--expr", "-ort:threads=[0|1]",
                 "--dataset", str(tiny_dataset), "--batch-size", "4", "--epsilon", "1e-3", "--revalidate-top-k", "0",
                 "--drift-every", "0", "--study", str(study), "--quiet", "--max-candidates", "1",
                 *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]) == 0
    capsys.readouterr()
    assert main(["revalidate", str(study), "0", "5"]) == 2
    assert "candidate #5 is not in the study" in capsys.readouterr().err
    assert main(["revalidate", str(study), "0", "0"]) == 2


def _tuned(tmp_path, tiny_model, tiny_dataset, capsys):
    study = tmp_path / "study"
    assert main(["tune", str(tiny_model), "--backend", FAULTY, "--expr", "-fault:call_ms=[0|40]",
                 "--dataset", str(tiny_dataset), "--batch-size", "4", "--epsilon", "1e-4", "--revalidate-top-k", "0",
                 "--drift-every", "0", "--study", str(study), "--quiet", "--profile-runs", "0",
                 *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]) == 0
    capsys.readouterr()
    return study


def test_run_dir_outside_the_study_is_one_line(tmp_path, tiny_model, tiny_dataset, capsys):
    study = _tuned(tmp_path, tiny_model, tiny_dataset, capsys)
    assert main(["revalidate", str(study), "0", "1", "--run-dir", str(tmp_path / "elsewhere")]) == 2
    assert "the run folder must be inside the study folder" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere").exists()


def test_a_killed_background_run_reads_as_failed(tmp_path, tiny_model, tiny_dataset, capsys, monkeypatch):
    """The comparison's process dies without a word (killed): readers say 'failed', not 'running'."""
    import os
    import signal
    import time

    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.device_lock import measuring_devices
    from gptuner_core.engine.decide.pairwise_jobs import latest_job
    from gptuner_core.engine.decide.pairwise_jobs import launch_pairwise

    study = _tuned(tmp_path, tiny_model, tiny_dataset, capsys)
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(tmp_path / "locks"))
    other = DeviceLock(measuring_devices("cpu"), study="busy-study")
    assert other.acquire(timeout=5)
    try:
        job = launch_pairwise(study, 0, 1, max_rounds=4)
        deadline = time.monotonic() + 60
        while (job := latest_job(study, 0, 1)).phase != "waiting":  # held by busy-study
            assert time.monotonic() < deadline and job.phase != "failed", job
            time.sleep(0.2)
        assert job.running and "busy-study" in job.progress.message
        os.kill(job.progress.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while (job := latest_job(study, 0, 1)).running:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    finally:
        other.release()
    assert job.phase == "failed" and job.cause
    with open_store(study, readonly=True) as store:
        assert not store.events("pairwise")  # nothing half-stored


def test_an_undecided_comparison_without_an_interval_asks_for_more_rounds() -> None:
    """Regimes can leave too few matched rounds for any interval; the sentence said "more rounds
    would not decide it", the opposite of the truth."""
    from gptuner_core.records.pairwise import Comparison

    base = dict(reference=0, candidate=3, verdict="inconclusive", speedup=1.22, rounds=6,
                max_rounds=6, method="matched", min_effect=0.01, stop_reason="max_rounds")
    without = Comparison(ci=None, **base).sentence()
    assert "would not decide" not in without and "no interval yet: more rounds are needed" in without
    sits = Comparison(ci=(0.99, 1.03), **base).sentence()
    assert "more rounds would not decide it" in sits


def test_the_comparison_states_its_confidence_without_rounding_it_up() -> None:
    """A pairwise interval at 99.6 % reads "99.6% CI", never "100% CI"."""
    from gptuner_core.records.pairwise import Comparison

    c = Comparison(reference=0, candidate=2, verdict="winner", speedup=1.3, ci=(1.2, 1.4), rounds=4,
                   max_rounds=12, method="t", min_effect=0.01, confidence=0.996)
    assert "99.6% CI [1.200, 1.400]" in c.sentence()


def test_a_round_refuses_a_process_that_runs_other_code_than_the_screened_build(
        tmp_path, tiny_model, tiny_dataset, capsys):
    """Issue 38: each measuring process reports the identity of what it ran; an artifact that
    is no longer the screened one (here replaced on disk, as a recompile that picked other
    kernels would be) is refused by the round, never measured as if it were the candidate."""
    from .conftest import make_tiny_model

    study = _tuned(tmp_path, tiny_model, tiny_dataset, capsys)
    with open_store(study, readonly=True) as store:
        artifact = store.candidate(1).artifact_path
    make_tiny_model(artifact, seed=7)  # other weights, same shapes: it would run and time fine
    code = main(["revalidate", str(study), "0", "1", "--max-rounds", "4"])
    captured = capsys.readouterr()
    assert code != 0, captured.out
    assert "ran other code than the screened build" in captured.out + captured.err
