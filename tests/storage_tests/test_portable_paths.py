"""A study folder moved or copied elsewhere (the bundled examples on another machine) still
points at its own candidates: paths inside the study are stored relative to it.

Defect: ``examples/studies/torch_h200`` recorded ``/tmp/torch_h200/candidates/00000/artifact/...``
and ``examples/studies/torch_h200_profiles`` ``/tmp/ba/sequential/...``: on any other machine
every artifact and log the dashboard offered was missing.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.storage import open_store


REPO = Path(__file__).resolve().parents[2]


def _study(root: Path) -> Path:
    (root / "candidates" / "00000" / "artifact").mkdir(parents=True)
    (root / "candidates" / "00000" / "log.txt").write_text("log")
    with open_store(root) as store:
        store.init_study({"model": "m.onnx"}, {})
        store.put_candidate(CandidateRecord(
            number=0, requested_route="", state=CandidateState.COMPLETE,
            artifact_path=str(root / "candidates" / "00000" / "artifact"),
            log_path=str(root / "candidates" / "00000" / "log.txt"),
        ))
    return root


def test_paths_inside_the_study_are_stored_relative_and_read_back_absolute(tmp_path: Path) -> None:
    root = _study(tmp_path / "a")
    con = sqlite3.connect(root / "study.sqlite")
    stored = con.execute("SELECT artifact_path, log_path FROM candidates").fetchone()
    con.close()
    assert stored == ("candidates/00000/artifact", "candidates/00000/log.txt")
    with open_store(root, readonly=True) as store:
        rec = store.candidate(0)
    assert rec.artifact_path == str(root.absolute() / "candidates/00000/artifact")


def test_a_moved_study_points_at_its_own_files(tmp_path: Path) -> None:
    root = _study(tmp_path / "a")
    moved = tmp_path / "elsewhere" / "b"
    shutil.copytree(root, moved.parent / "b")
    shutil.rmtree(root)
    with open_store(moved, readonly=True) as store:
        (rec,) = store.candidates()
    assert Path(rec.artifact_path).is_dir() and Path(rec.log_path).read_text() == "log"


def test_the_bundled_examples_find_their_artifacts_where_they_are() -> None:
    """Recorded with absolute paths on the machine that ran them (old rows stay readable)."""
    for name in ("torch_h200", "torch_h200_profiles"):
        study = REPO / "examples" / "studies" / name
        with open_store(study, readonly=True) as store:
            recs = [r for r in store.candidates() if r.artifact_path]
        assert recs
        for rec in recs:
            assert rec.artifact_path.startswith(str(study.absolute()) + "/candidates/"), rec.artifact_path
