"""Issue 24, item 1: every input is checked before anything is written.

Each case below is quoted in the issue; each test failed on the code before the fix (fe5c4bc: the
study was written first, a traceback escaped, or the input was accepted and gave a wrong study),
as did the dashboard-launch test at the end; the stored-configuration test is a guard that the
new checks do not refuse what was already recorded. A refusal is one ``gptuner: error: ...`` line,
exit 2, and the folder holds what it held before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from gptuner_core.cli import main
from gptuner_core.storage import open_store

from .conftest import FAULTY
from .conftest import QUICK


def _args(model, dataset, study, *extra, backend=FAULTY, expr="-ort:threads=[0|1]"):
    return ["tune", str(model), "--backend", backend, "--expr", expr, "--dataset", str(dataset),
            "--batch-size", "4", "--epsilon", "1e-3", "--revalidate-top-k", "0", "--drift-every", "0",
            "--max-candidates", "2", "--study", str(study), "--quiet",
            *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()], *extra]


def snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``roots`` with its size and mtime (what 'nothing changed' compares)."""
    out = {}
    for root in roots:
        for dirpath, dirs, files in os.walk(root):
            for name in dirs + files:
                p = Path(dirpath) / name
                st = p.lstat()
                out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def refused(capsys, *fragments: str) -> str:
    """The one error line (asserted: exit code checked by the caller, no traceback)."""
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gptuner: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def bad_files(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip archive")
    not_study = tmp_path / "not_a_study"
    not_study.mkdir()
    (not_study / "notes.txt").write_text("hello")
    return {"garbage": garbage, "not_study": not_study}


class TestRefusedBeforeTheStudyIsWritten:
    """The 11 inputs refused only after the default route was built and measured."""

    @pytest.mark.parametrize(("extra", "fragments"), [
        (["--epsilon", "nope=0.1"], ["'nope'", "not model outputs", "['y']"]),
        (["--epsilon", "=0.1"], ["--epsilon", "'=0.1'"]),
        (["--gate-outputs", "nope"], ["'nope'", "not model outputs", "['y']"]),
        (["--task-output", "nope"], ["'nope'", "not model outputs"]),
        (["--strategy-option", "bogus=1"], ["unknown option(s) ['bogus']", "allowed"]),
        (["--search", "tpe", "--strategy-option", "n_startup_trials=-1"],
         ["n_startup_trials", ">= 0", "-1"]),
        (["--strategy-option", "n_startup=-1"], ["unknown option(s) ['n_startup']"]),
        (["--warm-start", "/nonexistent"], ["--warm-start", "/nonexistent"]),
        (["--warm-start", "{not_study}"], ["--warm-start", "not_a_study", "study.sqlite"]),
        (["--calibration", "{garbage}"], ["garbage.npz", "not an .npz"]),
        (["--ray", "bogus:addr"], ["--ray", "'bogus:addr'", "port"]),
    ])
    def test_refused_and_nothing_written(self, tmp_path, tiny_model, tiny_dataset, bad_files, capsys,
                                         extra, fragments):
        study = tmp_path / "study"
        extra = [e.format(**bad_files) for e in extra]
        if extra[0] == "--task-output":  # top1 reads it, so a labelled dataset
            ds = tmp_path / "labelled.npz"
            np.savez(ds, x=np.zeros((8, 16), np.float32), labels=np.zeros(8, np.int64))
            args = _args(tiny_model, ds, study, "--task-metric", "top1", "--max-task-drop", "0.1", *extra)
        else:
            args = _args(tiny_model, tiny_dataset, study, *extra)
        before = snapshot(tmp_path)
        assert main(args) == 2
        refused(capsys, *fragments)
        assert not study.exists()
        assert snapshot(tmp_path) == before

    def test_onnxruntime_backend_knows_its_outputs(self, tmp_path, tiny_model, tiny_dataset, capsys):
        """The real ONNX Runtime backend names the model's outputs too (the check was dead code:
        no backend could name its outputs)."""
        study = tmp_path / "study"
        args = _args(tiny_model, tiny_dataset, study, "--gate-outputs", "nope", backend="onnxruntime",
                     expr="-quant:per_channel=[off|on]")
        assert main(args) == 2
        refused(capsys, "'nope'", "['y']")
        assert not study.exists()


class TestNoTraceback:
    @pytest.mark.parametrize("spec", ["os:system", "os:path", "json:loads", "gptuner_core.errors:GptunerError"])
    def test_backend_that_is_not_a_backend_class(self, tmp_path, tiny_model, tiny_dataset, capsys, spec):
        """``--backend os:system`` raised TypeError (os.system called with the options dict)."""
        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study, "--backend", spec)) == 2
        refused(capsys, "--backend", spec, "Backend")
        assert not study.exists()

    def test_backend_that_is_not_a_backend_class_via_config(self, tmp_path, tiny_model, tiny_dataset, capsys):
        config = tmp_path / "study.json"
        config.write_text(json.dumps({"model": str(tiny_model), "backend": "os:system",
                                      "expression": "-ort:threads=[0|1]", "epsilon": 0.001,
                                      "dataset": str(tiny_dataset)}))
        study = tmp_path / "study"
        assert main(["tune", "--study", str(study), "--config", str(config), "--quiet"]) == 2
        refused(capsys, "os:system", "Backend")
        assert not study.exists()

    @pytest.mark.parametrize("number", ["1e400", "1" + "0" * 400, "-1e400"])
    def test_import_of_a_cache_with_a_huge_number(self, tmp_path, capsys, number):
        """``import`` of a cache holding 10^400 raised OverflowError and left study.sqlite; 1e400
        (read as inf) was refused only after the study was written."""
        cache = tmp_path / "c.jsonl"
        cache.write_text(_cache_text(rows=[(0, "-a=on", "0.5"), (1, "-a=off", number)]))
        study = tmp_path / "imported"
        before = snapshot(tmp_path)
        assert main(["import", str(cache), "--study", str(study)]) == 2
        refused(capsys, "gpu_time", "finite")
        assert not study.exists() and snapshot(tmp_path) == before


def _cache_text(*, rows, expr="-a=[on|off]", epsilon="0.0", loss="null"):
    header = ('{"tuner_version":"2.19.45","accuracy_algorithm":"L0","accuracy_parameter":'
              '{"atol":1e-05,"rtol":1e-05,"epsilon":' + epsilon + '},"searching_algorithm":"fast",'
              '"command_line":"trtexec","default_build_route":"-a=on","tuning_expr":'
              + json.dumps(expr) + ',"files":{"onnx":"m.onnx"},"argv":["trtexec"]}')
    lines = [header]
    for it, route, gpu in rows:
        lines.append(f'{{"iter":{it},"build_route":"{route}","crash":false,"error_message":"",'
                     f'"accuracy_loss":{loss},"gpu_time":{gpu}}}')
    return "\n".join(lines) + "\n"


class TestAcceptedButWrong:
    def test_empty_study_path_is_refused(self, tmp_path, tiny_model, tiny_dataset, capsys, monkeypatch):
        """``--study ''`` wrote the study into the current directory."""
        monkeypatch.chdir(tmp_path)
        before = snapshot(tmp_path)
        assert main(_args(tiny_model, tiny_dataset, "")) == 2
        refused(capsys, "--study", "empty")
        assert snapshot(tmp_path) == before

    @pytest.mark.parametrize("argv", [["import", "{cache}", "--study", ""], ["show", ""], ["report", "", "-o", "{tmp}/r.html"]])
    def test_empty_path_is_refused_by_every_command(self, tmp_path, capsys, monkeypatch, argv):
        cache = tmp_path / "c.jsonl"
        cache.write_text(_cache_text(rows=[(0, "-a=on", "0.5")]))
        monkeypatch.chdir(tmp_path)
        before = snapshot(tmp_path)
        assert main([a.format(cache=cache, tmp=tmp_path) for a in argv]) == 2
        refused(capsys, "empty")
        assert snapshot(tmp_path) == before

    @pytest.mark.parametrize("gpu", ["-0.0807", "0", "0.0"])
    def test_cache_with_a_negative_or_zero_gpu_time_is_refused(self, tmp_path, capsys, gpu):
        """A negative ``gpu_time`` was imported and ranked best (median ms -0.0807)."""
        cache = tmp_path / "c.jsonl"
        cache.write_text(_cache_text(rows=[(0, "-a=on", "0.5"), (1, "-a=off", gpu)]))
        assert main(["import", str(cache), "--study", str(tmp_path / "s")]) == 2
        refused(capsys, "line 3", "gpu_time", "> 0", gpu)
        assert not (tmp_path / "s").exists()

    @pytest.mark.parametrize("expr", ["-a=[on|off", "a=[on|off]", "-a=[]", "-a=[on|on]", "-a=[0...4]", "-a=[on|off]x"])
    def test_cache_with_an_unparsable_tuning_expr_is_refused(self, tmp_path, capsys, expr):
        cache = tmp_path / "c.jsonl"
        cache.write_text(_cache_text(rows=[(0, "-a=on", "0.5")], expr=expr))
        assert main(["import", str(cache), "--study", str(tmp_path / "s")]) == 2
        refused(capsys, "tuning_expr")
        assert not (tmp_path / "s").exists()

    def test_cache_with_a_huge_loss_or_epsilon_is_refused(self, tmp_path, capsys):
        for kwargs in ({"loss": '{"y":' + "1" * 400 + "}"}, {"epsilon": "1" * 400}, {"epsilon": "1e400"}):
            cache = tmp_path / "c.jsonl"
            cache.write_text(_cache_text(rows=[(0, "-a=on", "0.5")], **kwargs))
            assert main(["import", str(cache), "--study", str(tmp_path / "s")]) == 2
            refused(capsys, "finite")
            assert not (tmp_path / "s").exists()

    @pytest.mark.parametrize("shapes", ["x:0x16", "x:0"])
    def test_zero_rows_along_the_batch_axis(self, tmp_path, tiny_model, capsys, shapes):
        """``--shapes input:0x64`` was accepted (a batch of zero rows: nothing measured)."""
        study = tmp_path / "study"
        args = [a for a in _args(tiny_model, "-", study) if a not in ("--dataset", "-")]
        assert main([*args, "--shapes", shapes]) == 2
        refused(capsys, "--shapes", "batch axis", ">= 1")
        assert not study.exists()

    def test_explain_negative_runs(self, finished_study, capsys):
        assert main(["explain", str(finished_study), "--runs", "-1"]) == 2
        refused(capsys, "--runs", "-1")


@pytest.fixture(scope="module")
def finished_study(tmp_path_factory, tiny_model, tiny_dataset):
    study = tmp_path_factory.mktemp("finished") / "study"
    assert main(_args(tiny_model, tiny_dataset, study)) == 0
    return study


class TestDestinationIsNotTheStudysOwnFile:
    """``gptuner export ST --trtexec-cache ST/study.sqlite`` overwrote the store."""

    @pytest.mark.parametrize("own", ["study.sqlite", "study.json", "inputs.npz", ".", "candidates/00000/result.json"])
    def test_export_over_a_study_file_is_refused(self, finished_study, capsys, own):
        target = finished_study / own
        before = snapshot(finished_study)
        assert main(["export", str(finished_study), "--trtexec-cache", str(target)]) == 2
        refused(capsys, "--trtexec-cache", "the study's own")
        assert snapshot(finished_study) == before
        with open_store(finished_study, readonly=True) as store:
            assert store.candidates()

    def test_relative_and_symlinked_spellings_are_caught(self, finished_study, tmp_path, capsys, monkeypatch):
        link = tmp_path / "link"
        link.symlink_to(finished_study)
        monkeypatch.chdir(finished_study.parent)
        for target in ["study/../study/study.sqlite", str(link / "study.sqlite")]:
            assert main(["export", "study", "--trtexec-cache", target]) == 2
            refused(capsys, "the study's own")

    @pytest.mark.parametrize(("argv", "flag"), [
        (["report", "{s}", "-o", "{s}/study.sqlite"], "--output"),
        (["bundle", "{s}", "-o", "{s}/candidates"], "--output"),
        (["export", "{s}", "--trtexec-cache", "{s}/study.sqlite-wal"], "--trtexec-cache"),
    ])
    def test_other_commands_refuse_too(self, finished_study, capsys, argv, flag):
        before = snapshot(finished_study)
        assert main([a.format(s=finished_study) for a in argv]) == 2
        refused(capsys, flag, "the study's own")
        assert snapshot(finished_study) == before

    def test_tune_output_inside_the_study_is_refused(self, tmp_path, tiny_model, tiny_dataset, capsys):
        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study, "--output", str(study / "study.sqlite"))) == 2
        refused(capsys, "--output", "the study's own")
        assert not study.exists()

    def test_a_file_beside_the_study_is_fine(self, finished_study, tmp_path, capsys):
        target = tmp_path / "cache.jsonl"
        assert main(["export", str(finished_study), "--trtexec-cache", str(target)]) == 0
        assert target.is_file()


def test_a_stored_configuration_loads_when_its_warm_start_source_is_gone(tmp_path, tiny_model):
    """Only a new study's plan reads --warm-start sources: a bundle's or an old study's stored
    configuration (read by gate, retune, --continue's fingerprint check) still loads."""
    from gptuner_core.config import StudyConfig

    cfg = StudyConfig.from_json({"model": str(tiny_model), "expression": "-ort:threads=[0|1]",
                                 "epsilon": 0.001, "warm_start": [str(tmp_path / "gone")]})
    assert cfg.warm_start == (str(tmp_path / "gone"),)


def test_the_dashboards_launch_checks_the_whole_plan_before_writing(tmp_path, tiny_model, tiny_dataset):
    """The dashboard's New run writes STUDY/study.json, then starts the tuner detached: a plan the
    tuner would refuse (an output the model lacks, garbage calibration data) left a folder behind."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.process.launch import launch_config
    from gptuner_core.errors import GptunerError

    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip")
    base = StudyConfig(model=str(tiny_model), backend=FAULTY, expression="-ort:threads=[0|1]",
                       epsilon=1e-3, dataset=str(tiny_dataset))
    for bad, fragment in ((base.replace(gate_outputs=("nope",)), "'nope'"),
                          (base.replace(calibration=str(garbage)), "garbage.npz")):
        with pytest.raises(GptunerError, match=fragment):
            launch_config(bad, tmp_path / "study")
        assert not (tmp_path / "study").exists()
