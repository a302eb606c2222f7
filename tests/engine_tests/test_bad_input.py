"""Bad input is refused with a clear message before anything is written; --force is recorded."""

from __future__ import annotations

import json

import numpy as np

from gptuner_core.cli import main
from gptuner_core.storage import open_store

from .conftest import FAULTY
from .conftest import QUICK


def _args(model, dataset, study, *extra):
    return ["tune", str(model), "--backend", FAULTY, "--expr", "-ort:threads=[0|1]",
            "--dataset", str(dataset), "--batch-size", "4", "--epsilon", "1e-3", "--revalidate-top-k", "0",
            "--drift-every", "0", "--study", str(study), "--quiet", *extra,
            *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]]


class TestBadInput:
    def test_dataset_with_wrong_names_writes_nothing(self, tmp_path, tiny_model, capsys):
        """A dataset whose arrays do not match the model's inputs: exit 2, no study folder."""
        bad = tmp_path / "bad.npz"
        np.savez(bad, y=np.zeros((4, 16), np.float32))
        assert main(_args(tiny_model, bad, tmp_path / "study")) == 2
        err = capsys.readouterr().err
        assert "missing input(s) ['x']" in err and "unexpected array(s) ['y']" in err
        assert "Traceback" not in err
        assert not (tmp_path / "study").exists()

    def test_no_expression_names_the_flags(self, tmp_path, tiny_model, tiny_dataset, capsys):
        """Defect: a new study without --expr said only "Empty input" (trtexec's message for an
        empty expression), not what was missing or where to find the knobs."""
        args = [a for a in _args(tiny_model, tiny_dataset, tmp_path / "s") if a not in ("--expr", "-ort:threads=[0|1]")]
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "needs a tunable expression" in err and "--expr-file" in err and "gptuner knobs" in err
        assert len(err.strip().splitlines()) == 1 and not (tmp_path / "s").exists()

    def test_top1_without_labels_is_refused(self, tmp_path, tiny_model, tiny_dataset, capsys):
        """--task-metric top1 needs a labels array."""
        code = main(_args(tiny_model, tiny_dataset, tmp_path / "s", "--task-metric", "top1"))
        assert code == 2
        assert "needs labels" in capsys.readouterr().err

    def test_existing_study_needs_continue(self, tmp_path, tiny_model, tiny_dataset, capsys):
        """Starting a new study over an existing one is refused; nothing recorded is lost."""
        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study)) == 0
        with open_store(study, readonly=True) as store:
            before = store.candidates()
        assert main(_args(tiny_model, tiny_dataset, study)) == 2
        assert "pass --continue" in capsys.readouterr().err
        with open_store(study, readonly=True) as store:
            assert store.candidates() == before

    def test_force_continues_and_records_the_override(self, tmp_path, tiny_model, tiny_dataset):
        """--force continues a study whose fingerprint differs and records what differed."""
        study = tmp_path / "study"
        assert main(_args(tiny_model, tiny_dataset, study)) == 0
        with open_store(study) as store:
            store.set_fingerprint({**store.fingerprint(), "host": "another-host"})
        # --extend: the study is finished, and a plain --continue re-runs nothing (issue 24)
        assert main(["tune", "--study", str(study), "--continue", "--extend", "--quiet"]) == 2
        assert main(["tune", "--study", str(study), "--continue", "--extend", "--force", "--quiet"]) == 0
        with open_store(study, readonly=True) as store:
            forced = store.events("force")
            assert store.fingerprint()["host"] != "another-host"
        assert forced and forced[0].payload["differences"][0][:2] == ["host", "another-host"]
