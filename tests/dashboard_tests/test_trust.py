"""The trust boundary: confined files, confined path options, code a study would run."""

from __future__ import annotations

import os

import pytest

from gptuner_core.dashboard import trust


class TestConfined:
    def test_inside(self, tmp_path) -> None:
        (tmp_path / "candidates").mkdir()
        log = tmp_path / "candidates" / "log.txt"
        log.write_text("x")
        assert trust.confined(str(log), tmp_path) == log.resolve()
        assert trust.confined("candidates/log.txt", tmp_path) == log.resolve()

    @pytest.mark.parametrize("path", ["/etc/passwd", "../secret.txt", "candidates/../../secret.txt"])
    def test_outside_refused(self, tmp_path, path) -> None:
        study = tmp_path / "study"
        study.mkdir()
        with pytest.raises(trust.UntrustedPathError, match="outside the study folder"):
            trust.confined(path, study, what="log")

    def test_symlink_out_refused(self, tmp_path) -> None:
        study = tmp_path / "study"
        study.mkdir()
        (tmp_path / "secret.txt").write_text("secret")
        os.symlink(tmp_path / "secret.txt", study / "log.txt")
        with pytest.raises(trust.UntrustedPathError):
            trust.confined(study / "log.txt", study)


def test_path_options_confined_to_workspace(tmp_path) -> None:
    assert trust.check_path_options({"cache_dir": "cache"}, tmp_path) == []
    assert trust.check_path_options({"cache_dir": str(tmp_path / "x")}, tmp_path) == []
    bad = trust.check_path_options({"cache_dir": "/tmp/../etc", "opt_level": 3}, tmp_path)
    assert len(bad) == 1 and "cache_dir='/tmp/../etc' is outside the workspace" in bad[0]


class TestCodeReferences:
    def test_foreign_code_listed(self, tmp_path) -> None:
        cfg = {"model": str(tmp_path / "net.py:factory"), "backend": "evil.pkg:Backend",
               "task_metric": f"{tmp_path}/evil.py:metric",
               "backend_options": {"trtexec": "/tmp/mytrtexec"}}
        refs = trust.code_references(cfg, study=tmp_path)
        assert any(r.startswith("task metric:") and "evil.py:metric" in r for r in refs)
        assert any(r.startswith("backend: evil.pkg:Backend") for r in refs)
        assert any(r.startswith("model factory:") for r in refs)
        assert any("trtexec: /tmp/mytrtexec" in r for r in refs)

    def test_bundled_and_plain_configs_are_clean(self) -> None:
        assert trust.code_references({"model": "assets/cnn_digits.onnx", "backend": "onnxruntime",
                                      "task_metric": "top1"}) == []
        assert trust.code_references({"model": str(trust.ROOT / "assets/torch_digits_cnn.py:factory"),
                                      "backend": "torch"}) == []
        assert trust.code_references({"model": "m.onnx", "task_metric": "gptuner_core.accuracy:top1"}) == []

    def test_study_relative_metric(self, tmp_path) -> None:
        """The copied-study attack of the issue: '<study>/evil.py:metric'."""
        (tmp_path / "evil.py").write_text("def metric(o, l): return 1.0\n")
        refs = trust.code_references({"model": "m.onnx", "task_metric": "evil.py:metric"},
                                     study=tmp_path)
        assert refs == ["task metric: evil.py:metric (Python file, imported and run)"]


def test_study_file_reroots_foreign_machine_paths(tmp_path) -> None:
    """The bundled H200 study recorded '/tmp/torch_h200/candidates/00001/log.txt'."""
    log = tmp_path / "candidates" / "00001" / "log.txt"
    log.parent.mkdir(parents=True)
    log.write_text("ok")
    path, note = trust.study_file(tmp_path, "/elsewhere/torch_h200/candidates/00001/log.txt", what="log")
    assert path == log.resolve() and "showing the study's own copy" in note
    path, note = trust.study_file(tmp_path, "/etc/passwd", what="log")
    assert path is None and "outside the study folder" in note
