"""A study folder from someone else, through every command: no code it names runs without
``--trust-study-code``, no stored path is followed out of it, nothing is written where it says.

Each case is a copy of the session's real study (ONNX Runtime, real SQLite) made hostile: a
config naming ``<study>/evil.py:metric`` or ``evil_factory.py:factory``, stored paths that are
absolute elsewhere, ``../..`` or a symlink out, a stored ``--output`` outside. Issue 24.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from gptuner_core.cli import main
from gptuner_core.storage import open_store


REPO = Path(__file__).resolve().parents[2]


def _copy(study: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "ws" / "copied"
    shutil.copytree(study, dst, symlinks=True)
    return dst


def _set_config(study: Path, **changes: object) -> None:
    with open_store(study, readonly=True) as store:
        cfg = {**store.config(), **changes}
    with sqlite3.connect(study / "study.sqlite") as conn:
        conn.execute("UPDATE study SET config = ? WHERE id = 1", (json.dumps(cfg),))
    (study / "study.json").write_text(json.dumps(cfg))


def _sql(study: Path, query: str, args: tuple = ()) -> None:
    with sqlite3.connect(study / "study.sqlite") as conn:
        conn.execute(query, args)


def _state(study: Path) -> str:
    """Everything the store holds, as text (what 'nothing written' compares)."""
    with sqlite3.connect(study / "study.sqlite") as conn:
        return "\n".join(conn.iterdump())


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])  # noqa: S607 - a pid that is surely gone
    proc.wait()
    return proc.pid


def _evil(study: Path, tmp_path: Path, name: str) -> Path:
    marker = tmp_path / f"{name}-ran"
    (study / f"{name}.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "def metric(outputs, labels):\n    return 1.0\n"
        "def factory():\n    raise SystemExit('evil factory')\n")
    return marker


def _one_line_refusal(capsys: pytest.CaptureFixture[str], *names: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, err
    return err


@pytest.mark.parametrize("kind", ["metric", "factory"])
def test_continue_refuses_the_code_a_study_names(kind: str, study: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: `tune --study S --continue` imported and ran <study>/evil.py:metric (and
    <study>/evil_factory.py:factory) with no notice."""
    copy = _copy(study, tmp_path)
    marker = _evil(copy, tmp_path, "evil" if kind == "metric" else "evil_factory")
    if kind == "metric":
        _set_config(copy, task_metric=f"{copy}/evil.py:metric", max_task_drop=0.5)
    else:
        _set_config(copy, model=f"{copy}/evil_factory.py:factory", backend="torch")
    _sql(copy, "DELETE FROM candidates WHERE number = 1")  # a candidate left to run
    _sql(copy, "UPDATE meta SET value = '\"stopped\"' WHERE key = 'status'")
    before = _state(copy)
    assert main(["tune", "--study", str(copy), "--continue", "--quiet"]) == 2
    _one_line_refusal(capsys, "evil", "--trust-study-code")
    assert not marker.exists()
    assert _state(copy) == before


def test_every_command_that_runs_a_study_asks_first(study: Path, bundle: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    copy = _copy(study, tmp_path)
    marker = _evil(copy, tmp_path, "evil")
    _set_config(copy, task_metric=f"{copy}/evil.py:metric", max_task_drop=0.5)
    base = tmp_path / "bundle"
    shutil.copytree(bundle, base)
    (base / "study.json").write_text(json.dumps({**json.loads((base / "study.json").read_text()),
                                                 "backend": "evil_backend:Backend"}))
    commands = [
        ["bundle", str(copy), "-o", str(tmp_path / "out")],
        ["revalidate", str(copy), "0", "1"],
        ["explain", str(copy), "1", "--capture"],
        ["diff", str(copy), "0", "1", "--capture"],
        ["retune", str(copy), "--model", str(REPO / "assets/mlp_digits.onnx"), "--study", str(tmp_path / "new")],
        ["gate", str(base), "--model", str(REPO / "assets/mlp_digits.onnx")],
    ]
    for argv in commands:
        assert main(argv) == 2, argv
        _one_line_refusal(capsys, "--trust-study-code")
    assert not marker.exists() and not (tmp_path / "out").exists() and not (tmp_path / "new").exists()


def test_python_m_does_not_import_modules_from_the_working_folder(study: Path, tmp_path: Path) -> None:
    """Defect: under `python -m gptuner_core` (cwd on sys.path) `bundle` imported a module
    the study folder held (here one shadowing onnxruntime)."""
    copy = _copy(study, tmp_path)
    marker = tmp_path / "shadow-ran"
    (copy / "onnxruntime.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\nraise ImportError('shadow')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "gptuner_core", "bundle", ".", "-o", str(tmp_path / "b")],
                         cwd=copy, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert not marker.exists(), out.stderr
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("how", ["absolute", "relative", "symlink", "info"])
def test_bundle_never_copies_a_stored_path_from_outside(how: str, study: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: `bundle` copied a stored artifact_path of /abs/SECRET.txt or ../../SECRET.txt
    into the bundle ("12 files verified")."""
    copy = _copy(study, tmp_path)
    secret = tmp_path / "SECRET.txt"
    secret.write_text("TOP-SECRET-TOKEN")
    if how == "info":
        with open_store(copy, readonly=True) as store:
            extras = {r.number: r.extra for r in store.candidates()}
        for number, extra in extras.items():
            info = {**(extra.get("info") or {}), "transformed_model": str(secret)}
            _sql(copy, "UPDATE candidates SET extra = ? WHERE number = ?",
                 (json.dumps({**extra, "info": info}), number))
    else:
        stored = {"absolute": str(secret), "relative": "../../SECRET.txt",
                  "symlink": "candidates/link.txt"}[how]
        (copy / "candidates" / "link.txt").symlink_to(secret)
        _sql(copy, "UPDATE candidates SET artifact_path = ?", (stored,))
    out = tmp_path / "out"
    rc = main(["bundle", str(copy), "-o", str(out)])
    err = capsys.readouterr().err
    assert rc in (0, 2) and "Traceback" not in err
    copied = [p for p in out.rglob("*") if p.is_file()] if out.exists() else []
    assert not any(b"TOP-SECRET-TOKEN" in p.read_bytes() for p in copied)
    assert rc == 0 or "outside the study folder" in err or "no artifact" in err, err


def test_a_profile_linked_out_of_the_folder_is_not_read(study: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: Compare and Explain (and `diff`/`explain`) followed a symlinked profile.json."""
    from gptuner_core.profiles import LayerProfile
    from gptuner_core.profiles import LayerTime
    from gptuner_core.profiles import profile_path

    copy = _copy(study, tmp_path)
    outside = LayerProfile(backend="onnxruntime", source="x", runs=1, layers=(
        LayerTime(name="SECRET_LAYER", kind="Gemm", time_ms=1.0, run_ms=(1.0,), origins=("SECRET_LAYER",)),))
    target = outside.save(tmp_path / "elsewhere.json")
    for n in (0, 1):
        profile_path(copy, n).unlink(missing_ok=True)
        profile_path(copy, n).symlink_to(target)
    main(["diff", str(copy), "0", "1"])
    main(["explain", str(copy), "1"])
    captured = capsys.readouterr()
    assert "SECRET_LAYER" not in captured.out + captured.err


def test_continue_on_a_finished_study_reruns_nothing(study: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: `--continue` on a finished study re-ran re-validation and replaced the verdict."""
    copy = _copy(study, tmp_path)
    before = _state(copy)
    assert main(["tune", "--study", str(copy), "--continue", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "is finished" in out and "--extend" in out
    assert _state(copy) == before


def test_continue_refuses_changed_settings(study: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: new --expr/--epsilon/--search with --continue exited 0, silently keeping the stored ones."""
    copy = _copy(study, tmp_path)
    before = _state(copy)
    for flag, value in (("--expr", "-ort:intra_op_num_threads=2"), ("--epsilon", "0.5"), ("--search", "random")):
        assert main(["tune", "--study", str(copy), "--continue", "--quiet", flag, value]) == 2, flag
        _one_line_refusal(capsys, flag, "stored")
    with open_store(copy, readonly=True) as store:
        same = store.config()["expression"]
    assert main(["tune", "--study", str(copy), "--continue", "--quiet", "--expr", same]) == 0  # not a change
    assert _state(copy) == before


def test_continue_never_writes_where_the_folder_says(study: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: CLI --continue wrote through a stored output / cache_dir outside."""
    import argparse

    from gptuner_core.cli.tune import resume_config

    copy = _copy(study, tmp_path)
    foreign = tmp_path / "foreign"
    _set_config(copy, output=str(foreign / "model.out"))
    args = argparse.Namespace(output=None, backend_option=None, max_candidates=None, time_budget=None)
    assert resume_config(copy, args).output is None  # outputs go where the user says now
    assert main(["tune", "--study", str(copy), "--continue", "--quiet"]) == 0
    assert "was not written" in capsys.readouterr().err  # said, not done
    assert not foreign.exists()
    _set_config(copy, backend_options={"cache_dir": str(foreign)})
    _sql(copy, "UPDATE meta SET value = '\"stopped\"' WHERE key = 'status'")
    assert main(["tune", "--study", str(copy), "--continue", "--quiet"]) == 2
    _one_line_refusal(capsys, "cache_dir", "outside its folder")
    assert not foreign.exists()


@pytest.mark.parametrize("status", ["finished", "stopped"])
def test_continue_says_the_stored_output_was_not_written(status: str, study: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Defect (issue 43 item 8): `--continue` without `--output` exited 0 and, by design, did not
    write the `--output` the study was started with, saying nothing: a pipeline retrying with
    `--continue` after a pre-emption got success and no model. One line now names the stored
    path and the command that writes it; the path is still not written through."""
    copy = _copy(study, tmp_path)
    stored = tmp_path / "elsewhere" / "model.out"
    _set_config(copy, output=str(stored))
    _sql(copy, "UPDATE meta SET value = ? WHERE key = 'status'", (json.dumps(status),))
    assert main(["tune", "--study", str(copy), "--continue", "--quiet"]) == 0
    captured = capsys.readouterr()
    lines = [line for line in (captured.out + captured.err).splitlines() if str(stored) in line]
    assert len(lines) == 1, captured
    assert "not written" in lines[0] and f"--continue --output {stored}" in lines[0], lines[0]
    assert not stored.parent.exists()  # the security rule stays: a stored path is not trusted
    assert main(["tune", "--study", str(copy), "--continue", "--quiet", "--output", str(stored)]) == 0
    assert stored.exists() and Path(f"{stored}.json").is_file()  # the command the line names writes it
    assert str(stored) not in capsys.readouterr().err


def test_continue_runs_a_failed_default_again(study: Path, tmp_path: Path) -> None:
    """Defect (issue 43 item 1): the default route's child SIGKILLed from outside left the study
    'failed' with #0 CRASHED ("killed: out of memory?"); neither `--continue` nor `--continue
    --extend` ran #0 again, so the study could never finish. The default defines 1.0x: a study
    that failed on it runs it again on --continue (and finishes with the same candidates)."""
    copy = _copy(study, tmp_path)
    with open_store(copy, readonly=True) as store:
        routes = sorted(r.requested_route for r in store.candidates())
    _sql(copy, "DELETE FROM candidates WHERE number > 0")
    _sql(copy, "UPDATE candidates SET state = 'CRASHED', error = ? WHERE number = 0",
         ("child killed by signal 9 (SIGKILL) during measure (killed: out of memory?)",))
    _sql(copy, "UPDATE meta SET value = '\"failed\"' WHERE key = 'status'")
    assert main(["tune", "--study", str(copy), "--continue", "--quiet"]) == 0
    with open_store(copy, readonly=True) as store:
        records = store.candidates()
        assert store.get_meta("status") == "finished"
    assert sorted(r.requested_route for r in records) == routes
    assert all(r.state.value == "COMPLETE" for r in records), [(r.number, r.state, r.error) for r in records]


def test_a_partial_bundle_is_finished_by_running_bundle_again(study: Path, tmp_path: Path) -> None:
    """Defect: killed while writing the bundle, the folder held `.samples.json.tmp-18852` and no
    manifest; the next run refused it ('already exists and is not an empty folder')."""
    out = tmp_path / "model.bundle"
    out.mkdir()
    (out / f".samples.json.tmp-{_dead_pid()}").write_text("{")
    (out / "artifact").mkdir()
    stale = tmp_path / f".model.bundle.partial-{_dead_pid()}"
    stale.mkdir()
    assert main(["bundle", str(study), "-o", str(out)]) == 0
    assert (out / "manifest.json").is_file() and not stale.exists()
    assert not any(p.name.startswith(".") for p in out.iterdir())


def test_a_creation_temp_file_alone_is_cleaned(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Defect: a study killed at creation held only `.study.json.tmp-27769`; `--continue` said
    'nothing to continue' and left it."""
    folder = tmp_path / "s"
    folder.mkdir()
    leftover = folder / f".study.json.tmp-{_dead_pid()}"
    leftover.write_text("{")
    assert main(["tune", "--study", str(folder), "--continue", "--quiet"]) == 2
    _one_line_refusal(capsys, "cut short", "again")
    assert not leftover.exists()


@pytest.mark.parametrize("left", ["partial", "finished"])
def test_output_beside_a_bundle_it_wrote_before(left: str, study: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Defect (CI, kill harness): killed while writing `--output s01.out`'s bundle, the resumed
    tune refused with "--output 's01.out' is the study folder 's01.out.bundle', which already holds
    a study": the bundle's copy of study.json made the bundle look like a study."""
    copy = _copy(study, tmp_path)
    out = tmp_path / "s01.out"
    assert main(["bundle", str(copy), "-o", f"{out}.bundle"]) == 0
    if left == "partial":
        (out.with_name(out.name + ".bundle") / "manifest.json").unlink()
    _sql(copy, "UPDATE meta SET value = '\"stopped\"' WHERE key = 'status'")
    capsys.readouterr()
    rc = main(["tune", "--study", str(copy), "--continue", "--quiet", "--output", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert (out.with_name(out.name + ".bundle") / "manifest.json").is_file()
