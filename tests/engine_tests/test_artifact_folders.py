"""engine.files.artifacts on real folders: who is kept, pruning marks first, a pruned or half-rebuilt
artifact is seen as needing a rebuild, disk use by part."""

from __future__ import annotations

from gptuner_core.engine.files import artifacts
from gptuner_core.engine.files.workspace import StudyWorkspace
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.records import Verdict
from gptuner_core.records import Winner


def rec(number: int, median: float, state: CandidateState = CandidateState.COMPLETE) -> CandidateRecord:
    names = ("median_ms", "mean_ms", "min_ms", "p5_ms", "p95_ms", "p99_ms", "ci_low_ms", "ci_high_ms")
    lat = LatencyStats.from_json({**dict.fromkeys(names, median), "cv": 0.0, "n_samples": 10})
    return CandidateRecord(number=number, requested_route=f"-r={number}", state=state, latency=lat)


def make_candidate(ws: StudyWorkspace, number: int, size: int = 1000) -> str:
    folder = ws.candidate_dir(number)
    (folder / "artifact" / "ort").mkdir(parents=True)
    (folder / "artifact" / "ort" / "model.optimized.onnx").write_bytes(b"x" * size)
    (folder / ".ort-transform-cache").mkdir()
    (folder / ".ort-transform-cache" / "k.onnx").write_bytes(b"y" * size)
    for name in ("job.json", "result.json", "log.txt", "phase"):
        (folder / name).write_text("{}")
    return str(folder / "artifact" / "ort")


def test_kept_numbers_by_mode():
    history = [rec(0, 10), rec(1, 5), rec(2, 4), rec(3, 6), rec(4, 3, CandidateState.ACCURACY_FAILED)]
    assert artifacts.kept_numbers(history, "all", 2) is None
    assert artifacts.kept_numbers(history, "top-k", 2) == {0, 2, 1}
    assert artifacts.kept_numbers(history, "best", 2) == {0, 2, 1}  # still running: contenders stay
    won = Winner(verdict=Verdict.WINNER, number=1, speedup=2.0, ci=None, message="m")
    assert artifacts.kept_numbers(history, "best", 2, won) == {0, 1}
    assert artifacts.kept_numbers(history, "top-k", 2, won) == {0, 1, 2}
    assert artifacts.kept_numbers(history, "top-k", 0) == {0, 2}  # screening-only winner


def test_prune_marks_then_deletes_and_needs_rebuild(tmp_path):
    ws = StudyWorkspace(tmp_path)
    path = make_candidate(ws, 3)
    info = {"transformed_model": str(ws.candidate_dir(3) / ".ort-transform-cache" / "k.onnx"),
            "model": "/elsewhere/model.onnx"}
    assert artifacts.candidate_dir_of(path) == ws.candidate_dir(3)
    assert not artifacts.needs_rebuild(path, info)
    (ws.candidate_dir(3) / ".ort-transform-cache" / "k.onnx").unlink()  # a file its info names
    assert artifacts.needs_rebuild(path, info)
    freed = artifacts.prune_folder(ws.candidate_dir(3))
    assert freed > 0
    assert sorted(p.name for p in ws.candidate_dir(3).iterdir()) == [
        "job.json", "log.txt", "phase", "pruned", "result.json"]
    assert artifacts.needs_rebuild(path, info)
    with artifacts.rebuilding(ws.candidate_dir(3), lambda: artifacts.needs_rebuild(path, info)) as needed:
        assert needed and (ws.candidate_dir(3) / artifacts.REBUILDING).exists()
        make_candidate_files = ws.candidate_dir(3) / "artifact" / "ort"
        make_candidate_files.mkdir(parents=True)
        (make_candidate_files / "model.optimized.onnx").write_bytes(b"z")
        (ws.candidate_dir(3) / ".ort-transform-cache").mkdir()
        (ws.candidate_dir(3) / ".ort-transform-cache" / "k.onnx").write_bytes(b"z")
    assert not artifacts.needs_rebuild(path, info)
    assert not (ws.candidate_dir(3) / artifacts.PRUNED).exists()


def test_a_rebuild_cut_short_is_redone(tmp_path):
    ws = StudyWorkspace(tmp_path)
    path = make_candidate(ws, 2)
    (ws.candidate_dir(2) / artifacts.REBUILDING).write_text("x")  # killed mid-rebuild
    assert artifacts.needs_rebuild(path, {})


def test_prune_study_keeps_the_kept_and_the_busy_and_disk_use(tmp_path):
    ws = StudyWorkspace(tmp_path)
    for n in range(4):
        make_candidate(ws, n, size=50_000)
    history = [rec(0, 10), rec(1, 5), rec(2, 4), rec(3, 6, CandidateState.ACCURACY_FAILED)]
    before = artifacts.disk_use(tmp_path)
    assert before.with_artifacts == (0, 1, 2, 3)
    freed = artifacts.prune_study(tmp_path, history, {0, 2}, busy={1})
    after = artifacts.disk_use(tmp_path)
    assert after.with_artifacts == (0, 1, 2) and after.pruned == (3,)
    assert freed > 100_000 and before.total - after.total > 100_000
    assert "disk: " in after.summary() and "1 pruned" in after.summary()
    assert artifacts.prune_study(tmp_path, history, None) == 0  # all keeps everything


def test_a_kept_candidate_keeps_only_what_loading_needs(tmp_path):
    ws = StudyWorkspace(tmp_path)
    path = make_candidate(ws, 1)
    folder = ws.candidate_dir(1)
    cache = folder / ".ort-transform-cache"
    (cache / "k.json").write_text("{}")
    (cache / "other.pre.onnx").write_bytes(b"p" * 5000)  # a transform's intermediate model
    (folder / "profile").mkdir()
    (folder / "profile" / "runtime_graph.onnx").write_bytes(b"g" * 5000)
    info = {"transformed_model": str(cache / "k.onnx"), "optimized_model": path + "/model.optimized.onnx"}
    assert artifacts.trim_folder(folder, info) >= 10000
    assert sorted(p.name for p in cache.iterdir()) == ["k.json", "k.onnx"]
    assert not list((folder / "profile").iterdir())
    assert not artifacts.needs_rebuild(path, info)


def test_tree_bytes_counts_blocks_once_per_file_and_never_follows_a_link(tmp_path):
    """A hard link is one file; a symbolic link counts as itself (its target, a folder of
    megabytes, is not walked); a missing path is 0 bytes; a file is its own blocks."""
    import os

    folder = tmp_path / "study"
    (folder / "a" / "b").mkdir(parents=True)
    (folder / "a" / "b" / "big.bin").write_bytes(b"x" * 100_000)
    (folder / "small.txt").write_bytes(b"y" * 10)
    os.link(folder / "a" / "b" / "big.bin", folder / "same.bin")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "huge.bin").write_bytes(b"z" * 3_000_000)
    os.symlink(outside, folder / "link")
    blocks = {(st.st_dev, st.st_ino): st.st_blocks * 512
              for st in (os.lstat(p) for p in (folder, folder / "a", folder / "a" / "b",
                                               folder / "a" / "b" / "big.bin", folder / "small.txt",
                                               folder / "link"))}
    assert artifacts.tree_bytes(folder) == sum(blocks.values()) < 3_000_000
    assert artifacts.tree_bytes(folder / "small.txt") == os.lstat(folder / "small.txt").st_blocks * 512
    assert artifacts.tree_bytes(tmp_path / "missing") == 0


def test_disk_use_splits_the_folder_into_parts_that_add_up_to_its_total(tmp_path):
    """Each part is what its files take: build outputs (a racing ``rung`` folder's too), the
    candidates' records, the re-measurements, the study's own files; together the total."""
    ws = StudyWorkspace(tmp_path)
    for n in range(3):
        make_candidate(ws, n, size=20_000 * (n + 1))
    folder = ws.candidate_dir(1)
    (folder / "rung1").mkdir()
    (folder / "rung1" / "artifact").mkdir()
    (folder / "rung1" / "artifact" / "model.onnx").write_bytes(b"r" * 30_000)
    (folder / "rung1" / "result.json").write_text("{}" * 3000)
    (folder / "log.txt").write_text("l" * 9000)
    (tmp_path / "revalidation" / "r0_00001").mkdir(parents=True)
    (tmp_path / "revalidation" / "r0_00001" / "log.txt").write_text("v" * 12_000)
    (tmp_path / "golden.npz").write_bytes(b"g" * 15_000)
    outputs = [p for n in range(3) for p in artifacts.build_outputs(ws.candidate_dir(n))]
    build = sum(artifacts.tree_bytes(p) for p in outputs)
    folders = sum(artifacts.tree_bytes(ws.candidate_dir(n)) for n in range(3))
    use = artifacts.disk_use(tmp_path)
    assert use.build_outputs == build > 30_000 + 60_000
    assert use.records == folders - build > 9000 + 6000
    assert use.remeasurements == artifacts.tree_bytes(tmp_path / "revalidation") > 12_000
    assert use.total == artifacts.tree_bytes(tmp_path)
    assert use.study_files == use.total - use.build_outputs - use.records - use.remeasurements > 15_000
    assert use.with_artifacts == (0, 1, 2) and use.pruned == ()
