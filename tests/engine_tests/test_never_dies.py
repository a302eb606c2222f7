"""No candidate and no input can kill the tuner (issue "The engine as one package", items 1–9).

Each test drives the real CLI (``gptuner_core.cli.main`` or ``python -m gptuner_core``) with real
ONNX Runtime children, real SQLite and real signals.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gptuner_core.cli import main
from gptuner_core.storage import open_store

from .conftest import FAULTY
from .conftest import QUICK
from .conftest import REPO


def _args(model, dataset, study, *extra, expr="-ort:threads=[0|1]", quick=True):
    out = ["tune", str(model), "--backend", FAULTY, "--expr", expr,
           "--dataset", str(dataset), "--batch-size", "4", "--epsilon", "1e-3", "--revalidate-top-k", "0",
           "--drift-every", "0", "--study", str(study), "--quiet"]
    if quick:
        out += [f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]
    return out + list(extra)  # last, so an extra --measure-option overrides the quick one


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gptuner: error: "), err
    return lines[0]


class TestSingleSample:
    def test_a_candidate_with_one_latency_sample_is_ranked_without_a_ci(self, tmp_path, tiny_model, tiny_dataset):
        """Item 1: a slow route measured once must not crash the tuner (scipy bootstrap needs two
        observations); it gets a point speed-up, no CI, a note — and --continue works too."""
        study = tmp_path / "study"
        quick = {**QUICK, "max_time_s": 0.05, "min_sample_time_s": 0.0}
        extra = [f"--measure-option={k}={json.dumps(v)}" for k, v in quick.items()]
        assert main(_args(tiny_model, tiny_dataset, study, *extra, expr="-fault:call_ms=[0|40]",
                          quick=False)) == 0
        with open_store(study, readonly=True) as store:
            slow = store.candidates(with_samples=True)[1]
        assert slow.state.value == "COMPLETE" and len(slow.samples_ms) == 1
        assert slow.speedup is not None and slow.speedup_ci is None
        assert "no confidence interval" in slow.extra["speedup_note"]
        assert main(["tune", "--study", str(study), "--continue", "--quiet"]) == 0


class TestSettingsBeforeAnythingIsWritten:
    @pytest.mark.parametrize(("extra", "needle"), [
        (["--build-timeout", "nan"], "--build-timeout must be a finite number > 0 (got nan)"),
        (["--measure-timeout", "nan"], "--measure-timeout must be a finite number > 0 (got nan)"),
        (["--task-metric", "no_such_module_xyz:fn"], "cannot find module 'no_such_module_xyz'"),
        (["--task-metric", "accuracy"], "task metric must be 'top1' or 'module:function'"),
        (["--task-metric", "top1", "--max-task-drop", "nan"], "--max-task-drop must be a finite number >= 0 (got nan)"),
        (["--task-metric", "missing_metrics.py:f"], "file 'missing_metrics.py' not found"),
        (["--atol", "nan"], "--atol must be a finite number >= 0 (got nan)"),
        (["--measure-option", "max_time_s=-1"], "max_time_s"),
        (["--measure-option", "bogus=1"], "unknown setting(s) ['bogus']"),
        (["--min-effect", "nan"], "--min-effect must be a finite number >= 0 and < 1 (got nan)"),
        (["--target-speedup", "nan"], "--target-speedup must be a finite number > 0 (got nan)"),
        (["--revalidate-top-k", "-3"], "--revalidate-top-k must be an integer >= 0 (got -3)"),
        (["--epsilon", "inf"], "--epsilon must be a finite number > 0 (got inf)"),
        (["--revalidate-rounds", "1"], "--revalidate-rounds must be an integer >= 2 (got 1)"),
    ])
    def test_bad_setting_is_one_line_and_no_folder(self, tmp_path, tiny_model, tiny_dataset, capsys,
                                                   extra, needle):
        """Items 2 and 5: refused with one line (what, expected, got), nothing created."""
        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study, *extra)) == 2
        assert needle in _one_line_error(capsys)
        assert not study.exists()

    def test_max_task_drop_must_be_finite(self, tmp_path, tiny_model, capsys):
        ds = tmp_path / "ds.npz"
        np.savez(ds, x=np.zeros((8, 16), np.float32), labels=np.zeros(8, np.int64))
        for bad, needle in (("nan", "(got nan)"), ("-1", "(got -1.0)")):
            code = main(_args(tiny_model, ds, tmp_path / "s", "--task-metric", "top1",
                              "--max-task-drop", bad))
            assert code == 2
            line = _one_line_error(capsys)
            assert "--max-task-drop must be a finite number >= 0" in line and needle in line
        assert not (tmp_path / "s").exists()

    @pytest.mark.parametrize(("arrays", "needle"), [
        ({"x": np.zeros((8, 16), np.float32), "labels": np.zeros((8, 2), np.int64)}, "1-D array of integer"),
        ({"x": np.zeros((8, 16), np.float32), "labels": np.zeros(8, np.float32)}, "1-D array of integer"),
        ({"x": np.full((8, 16), np.nan, np.float32), "labels": np.zeros(8, np.int64)}, "non-finite"),
        ({"x": np.full((8, 16), np.inf, np.float32), "labels": np.zeros(8, np.int64)}, "non-finite"),
    ])
    def test_bad_dataset_values_are_refused(self, tmp_path, tiny_model, capsys, arrays, needle):
        """Item 5: 2-D or float labels, NaN/inf inputs (they would become the golden reference)."""
        ds = tmp_path / "ds.npz"
        np.savez(ds, **arrays)
        assert main(_args(tiny_model, ds, tmp_path / "s", "--task-metric", "top1")) == 2
        assert needle in _one_line_error(capsys)
        assert not (tmp_path / "s").exists()


class TestTaskMetricIsolation:
    @pytest.mark.parametrize(("body", "state"), [
        ("import time\n    time.sleep(60)\n    return 1.0", "TIMED_OUT"),
        ("import os\n    os._exit(7)", "CRASHED"),
        ("raise RuntimeError('metric bug')", "ACCURACY_FAILED"),
    ])
    def test_a_misbehaving_task_metric_is_the_candidates_problem(self, tmp_path, tiny_model, tiny_dataset, body, state):
        """Item 3: the metric runs in the candidate's process under its timeout: a hang, an exit
        or an exception becomes that candidate's state; the tuner returns and records it."""
        metric = tmp_path / "metric.py"
        metric.write_text(f"def score(outputs, labels):\n    {body}\n", encoding="utf-8")
        study = tmp_path / "study"
        # no wall-clock bound here (a busy machine is slow, issue 24): a metric that were not
        # stopped would hang the tuner past the suite's timeout; the state below is the behaviour
        code = main(_args(tiny_model, tiny_dataset, study, "--task-metric", f"{metric}:score",
                          "--measure-timeout", "5"))
        assert code == 1  # the default route failed: the study cannot rank routes
        with open_store(study, readonly=True) as store:
            first = store.candidates()[0]
            status = store.get_meta("status")
        assert first.state.value == state and status == "failed"


class TestCreationIsAtomic:
    def test_folder_left_uninitialised_is_accepted_again(self, tmp_path, tiny_model, tiny_dataset):
        """Item 4: a kill right after study.sqlite appeared left a store without a study;
        neither 'tune' nor '--continue' accepted it. Now a new 'tune' starts it afresh."""
        study = tmp_path / "study"
        open_store(study).close()  # what an older tuner killed during creation left behind
        assert main(_args(tiny_model, tiny_dataset, study)) == 0
        with open_store(study, readonly=True) as store:
            assert store.get_meta("status") == "finished"

    def test_kill_during_creation_leaves_no_study_or_a_resumable_one(self, tmp_path, tiny_model, tiny_dataset, monkeypatch):
        """Item 4: the store appears only when complete; --continue picks up study.json."""
        from gptuner_core.engine.files import workspace

        study = tmp_path / "study"

        def killed(self):  # noqa: ANN001 - the instant just before the store is moved into place
            raise KeyboardInterrupt

        monkeypatch.setattr(workspace.StudyWorkspace, "commit_creation", killed)
        assert main(_args(tiny_model, tiny_dataset, study)) == 130
        monkeypatch.undo()
        assert not (study / "study.sqlite").exists() and (study / "study.json").exists()
        assert main(["tune", "--study", str(study), "--continue", "--quiet"]) == 0
        with open_store(study, readonly=True) as store:
            assert store.get_meta("status") == "finished" and len(store.candidates()) == 2
        assert not list(study.glob(".creating-*"))


class TestStudyFiles:
    def test_damaged_inputs_are_rebuilt_and_verified(self, tmp_path, tiny_model, tiny_dataset):
        """Item 6: a truncated inputs.npz (full disk) no longer breaks the study for good."""
        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study, "--max-candidates", "1")) == 0
        data = (study / "inputs.npz").read_bytes()
        (study / "inputs.npz").write_bytes(data[: len(data) // 2])
        assert main(["tune", "--study", str(study), "--continue", "--max-candidates", "2", "--quiet"]) == 0
        with open_store(study, readonly=True) as store:
            assert [r.state.value for r in store.candidates()] == ["COMPLETE", "COMPLETE"]

    def test_inputs_changed_under_a_study_are_refused(self, tmp_path, tiny_model, tiny_dataset, capsys):
        study = tmp_path / "study"
        ds = tmp_path / "mine.npz"
        np.savez(ds, x=np.ones((8, 16), np.float32))
        assert main(_args(tiny_model, ds, study, "--max-candidates", "1")) == 0
        capsys.readouterr()
        (study / "inputs.npz").unlink()
        np.savez(ds, x=np.zeros((8, 16), np.float32))  # the dataset changed meanwhile
        assert main(["tune", "--study", str(study), "--continue", "--extend", "--quiet"]) == 2
        assert "no longer reproduces them" in _one_line_error(capsys)

    def test_a_drift_point_cut_short_is_redone(self):
        """Item 6: the latest due drift re-measurement, missing from the store, runs first."""
        from gptuner_core.engine.loop.loop import drift_point

        recs = [_rec(i) for i in range(7)]
        assert drift_point(recs, 3) == 6 and drift_point(recs[:6], 3) == 3
        assert drift_point(recs[:1], 3) is None and drift_point(recs, 0) is None


def _rec(n):
    from gptuner_core.records import CandidateRecord

    return CandidateRecord(number=n, requested_route="")


class TestPaths:
    @pytest.mark.parametrize("kind", ["file", "under_file", "proc"])
    def test_unusable_study_path(self, tmp_path, tiny_model, tiny_dataset, capsys, kind):
        """Item 7: a study path that is a file, under a file, or in /proc: one line, exit 2."""
        target = {"file": tmp_path / "f", "under_file": tmp_path / "f" / "study",
                  "proc": Path("/proc/gptuner-study")}[kind]
        (tmp_path / "f").write_text("x")
        assert main(_args(tiny_model, tiny_dataset, target)) == 2
        assert "study folder" in _one_line_error(capsys)

    def test_unwritable_output_is_refused_before_the_study(self, tmp_path, tiny_model, tiny_dataset, capsys):
        """Item 7: --output under a file is refused up front, nothing runs."""
        (tmp_path / "f").write_text("x")
        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study, "--output", str(tmp_path / "f" / "m.onnx"))) == 2
        assert "--output" in _one_line_error(capsys)
        assert not (study / "study.sqlite").exists()

    @pytest.mark.parametrize("command", [
        ["knobs", "--knob-db", "{deep}"], ["knobs-diff", "{deep}", "{deep}"],
        ["cache", "show", "{deep}"], ["import", "{deep}", "--study", "{tmp}/imp"],
    ])
    def test_deeply_nested_json_is_one_line(self, tmp_path, capsys, command):
        """Item 7: 200,000-deep nested JSON gave RecursionError tracebacks."""
        deep = tmp_path / "deep.json"
        deep.write_text("[" * 200_000 + "]" * 200_000)
        argv = [a.format(deep=deep, tmp=tmp_path) for a in command]
        assert main(argv) == 2
        assert "nested too deeply" in _one_line_error(capsys)


def _spawn_tune(args: list[str], env_extra: dict[str, str] | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env_extra or {})}
    return subprocess.Popen([sys.executable, "-m", "gptuner_core", *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_candidates(study: Path, n: int, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if (study / "study.sqlite").exists():
            try:
                with open_store(study, readonly=True) as store:
                    if len([r for r in store.candidates() if r.state.is_finished()]) >= n:
                        return
            except Exception:  # noqa: BLE001, S110 - store being created
                pass
        time.sleep(0.1)
    raise AssertionError(f"{study}: fewer than {n} candidates after {timeout} s")


class TestSignalsAndStatus:
    EXPR = "-fault:sleep_ms=[0|300] -ort:threads=[0|1] -fault:label=[a|b]"

    def test_sigterm_stops_like_sigint(self, tmp_path, tiny_model, tiny_dataset):
        """Item 8: SIGTERM used to exit -15 with the status left 'running'."""
        study = tmp_path / "study"
        proc = _spawn_tune(_args(tiny_model, tiny_dataset, study, "--search", "full", expr=self.EXPR))
        _wait_candidates(study, 1)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        assert proc.returncode == 130
        with open_store(study, readonly=True) as store:
            assert store.get_meta("status") == "stopped"
            assert "SIGTERM" in store.get_meta("status_message")

    def test_a_killed_tuner_is_shown_interrupted(self, tmp_path, tiny_model, tiny_dataset, capsys):
        """Item 8: after a SIGKILL 'gptuner show' said 'running' with no process alive."""
        study = tmp_path / "study"
        proc = _spawn_tune(_args(tiny_model, tiny_dataset, study, "--search", "full", expr=self.EXPR))
        _wait_candidates(study, 1)
        proc.kill()
        proc.wait(30)
        assert main(["show", str(study)]) == 0
        assert capsys.readouterr().out.splitlines()[0].split(": ")[1].startswith("interrupted")

    def test_stop_on_an_idle_study_is_refused_and_never_blocks_continue(self, tmp_path, tiny_model, tiny_dataset, capsys):
        """Item 8: 'gptuner stop' on an idle study left a stop file that made the next
        --continue evaluate nothing."""
        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study, "--max-candidates", "1")) == 0
        capsys.readouterr()
        assert main(["stop", str(study)]) == 2
        assert "no tuner is running" in _one_line_error(capsys)
        (study / "stop").write_text("stale")  # e.g. left by an older gptuner
        assert main(["tune", "--study", str(study), "--continue", "--max-candidates", "2", "--quiet"]) == 0
        with open_store(study, readonly=True) as store:
            assert len(store.candidates()) == 2

    def test_disk_full_reports_the_write_that_failed(self, tmp_path, tiny_model, tiny_dataset):
        """Item 8: a full disk reported the follow-up 'cannot set meta status' error."""
        import resource

        study = tmp_path / "study"

        def small_files():  # writes past 64 KiB fail with EFBIG, as on a full disk
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

        env = {**os.environ, "PYTHONPATH": str(REPO)}
        big = tmp_path / "big.npz"
        np.savez(big, x=np.random.default_rng(0).normal(size=(2000, 16)).astype(np.float32))
        proc = subprocess.run(
            [sys.executable, "-m", "gptuner_core", *_args(tiny_model, big, study)],
            env=env, cwd=REPO, capture_output=True, text=True, preexec_fn=small_files, timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "File too large" in proc.stderr and "cannot set meta" not in proc.stderr

    def test_disk_full_on_a_destination_names_the_destination(self, tmp_path, tiny_model, tiny_dataset):
        """Defect (issue 43 item 7): a full disk under `report -o` said 'cannot access: File too
        large' (no path), one under a copy named its source (the model) instead of its
        destination, and a copied folder printed shutil's raw error list."""
        import resource

        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study, "--max-candidates", "1")) == 0

        def small_files():  # writes past 4 KiB fail with EFBIG, as on a full disk
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

        env = {**os.environ, "PYTHONPATH": str(REPO)}
        out = tmp_path / "out"
        for argv, dest in ((["report", str(study), "-o", str(out / "r.html")], out / "r.html"),
                           (["bundle", str(study), "-o", str(out / "b")], out / "b")):
            out.mkdir(exist_ok=True)
            proc = subprocess.run([sys.executable, "-m", "gptuner_core", *argv], env=env, cwd=REPO,
                                  capture_output=True, text=True, preexec_fn=small_files, timeout=120)
            err = proc.stderr.strip()
            assert proc.returncode == 2 and "Traceback" not in err and err.count("\n") == 0, err
            assert "File too large" in err and str(dest) in err and "[(" not in err, err

    def test_a_copy_error_names_its_destination_in_one_line(self):
        """--output's copy: shutil.copytree's error list and a copy's (source, destination)
        error become one line naming the destination (issue 43 item 7)."""
        import errno
        import shutil

        from gptuner_core.errors import os_error_text

        listed = shutil.Error([("/m/a.bin", "/out/.x.tmp/a.bin", "[Errno 28] No space left on device"),
                               ("/m/b.bin", "/out/.x.tmp/b.bin", "[Errno 28] No space left on device")])
        assert os_error_text(listed) == ("cannot copy '/m/a.bin' to '/out/.x.tmp/a.bin': [Errno 28] No space "
                                         "left on device (and 1 more file(s))")
        copied = OSError(errno.ENOSPC, "No space left on device", "/m/model.onnx", None, "/out/model.onnx")
        assert os_error_text(copied) == "cannot write '/out/model.onnx': No space left on device"

    def test_progress_never_exceeds_its_total(self, tmp_path, tiny_model, tiny_dataset, monkeypatch):
        """Item 8: progress read 25/24 when a strategy's plan left the default route out."""
        from gptuner_core.strategies.fast import EnumerationStrategy

        planned = EnumerationStrategy.planned
        monkeypatch.setattr(EnumerationStrategy, "planned", lambda self: planned(self) - 1)
        seen = []
        from gptuner_core.config import StudyConfig
        from gptuner_core.engine.loop.tuner import Tuner

        cfg = StudyConfig(model=str(tiny_model), backend=FAULTY, expression=self.EXPR,
                          search="fast", dataset=str(tiny_dataset), batch_size=4, epsilon=1e-3,
                          revalidate_top_k=0, drift_every=0, measurement=dict(QUICK))
        Tuner(cfg, tmp_path / "study", progress=seen.append).run()
        assert seen and all(p.total is None or p.total >= p.done for p in seen)
        with open_store(tmp_path / "study", readonly=True) as store:
            progress = store.get_meta("progress")
        assert progress["total"] >= progress["done"] == 4


class TestHelp:
    def test_every_command_has_a_help(self, capsys):
        """Item 9: 'gptuner tune --help' crashed (an unescaped % in a strategy description)."""
        from gptuner_core.cli import _COMMANDS

        for name in _COMMANDS:
            assert main([name, "--help"]) == 0, name
            out = capsys.readouterr()
            assert "Traceback" not in out.err and "usage:" in out.out, name
