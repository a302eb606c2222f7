"""``gptuner bundle``: the recommended artifact with its evidence, verified on load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gptuner_core.bundle import load_bundle
from gptuner_core.cli import main
from gptuner_core.errors import BundleError


def test_bundle_holds_everything_a_gate_needs(bundle: Path, study: Path) -> None:
    from gptuner_core.storage import open_store

    b = load_bundle(bundle)
    with open_store(study, readonly=True) as store:
        winner = store.winner()
        rec = store.candidate(winner.number if winner else 0)
        default = store.candidate(0)
        fingerprint = store.fingerprint()
    assert b.candidate == rec.number and b.route == rec.requested_route
    assert b.fingerprint == fingerprint
    assert b.artifact.is_dir() and any(b.artifact.rglob("*.onnx"))
    assert Path(b.info["transformed_model"]).is_relative_to(bundle)  # self-contained
    for name in ("golden.npz", "inputs.npz", "study.json", "samples.json", "rebuild.sh"):
        assert b.has(name), name
    samples = b.samples()
    assert samples["winner"]["screening_ms"] == list(rec.samples_ms)
    assert samples["default"]["screening_ms"] == list(default.samples_ms)
    assert samples["revalidation"] and "0" in samples["revalidation"][0]["round_medians_ms"]
    rounds = samples["revalidation_samples_ms"]["0"]  # raw samples of each fresh process
    assert len(rounds) == len(samples["revalidation"][0]["round_medians_ms"]["0"])
    medians = samples["revalidation"][0]["round_medians_ms"]["0"]
    assert sorted(float(np.median(v)) for v in rounds.values()) == pytest.approx(sorted(medians))
    assert b.timing_cache == {"included": False, "reason": "the onnxruntime backend has no timing cache"}
    assert any(c.startswith("gptuner tune --config ") for c in b.commands)
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert set(manifest["files"]) == {p.relative_to(bundle).as_posix() for p in bundle.rglob("*")
                                      if p.is_file() and p.name != "manifest.json"}


def test_a_changed_file_is_named_with_both_hashes(bundle: Path, tmp_path: Path) -> None:
    import shutil

    from gptuner_core.fingerprint import file_sha256

    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    target = copy / "golden.npz"
    expected = file_sha256(target)
    target.write_bytes(target.read_bytes() + b"x")
    with pytest.raises(BundleError) as info:
        load_bundle(copy)
    text = str(info.value)
    assert "'golden.npz'" in text and expected in text and file_sha256(target) in text


def test_cli_errors_are_one_line(tmp_path: Path, study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bundle", str(tmp_path), "-o", str(tmp_path / "out")]) == 2
    assert "holds no study" in capsys.readouterr().err
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    assert main(["bundle", str(study), "-o", str(busy)]) == 2
    err = capsys.readouterr().err
    assert "not an empty folder" in err and "Traceback" not in err
    assert main(["gate", str(tmp_path), "--model", str(tmp_path)]) == 2
    assert "is not a baseline bundle" in capsys.readouterr().err
