"""``gptuner retune`` after the model's input shape changed: the old route re-validated against
the new default first, then a warm-started study, with the lineage recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import measure_args
from models import fixed_batch

from gptuner_core.cli import main


pytestmark = pytest.mark.slow


def test_retune_after_an_input_shape_change(study: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from gptuner_core.storage import open_store

    model = fixed_batch(tmp_path / "b16.onnx", 16)
    new = tmp_path / "retuned"
    rc = main(["retune", str(study), "--model", str(model), "--study", str(new), "--time-budget", "30s",
               "--check-rounds", "4", *measure_args(), "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "inputs: [\"input:float32:['batch', 64]\"] -> ['input:float32:[16, 64]']" in out
    with open_store(study, readonly=True) as store:
        old = store.winner()
        old_route = store.candidate(old.number if old.significant else old.best).requested_route
    with open_store(new, readonly=True) as store:
        lineage = store.get_meta("lineage")
        warm = store.events("warm_start")
        assert store.fingerprint()["inputs"] == ["input:float32:[16, 64]"]
        config = store.config()
    assert lineage["from"] == str(study)
    assert isinstance(lineage["old_winner_holds"], bool)
    assert lineage["check"]["route"] == old_route and lineage["check"]["rounds"] >= 4
    assert (new / "lineage" / "revalidation").is_dir()  # re-measured in fresh processes
    assert config["warm_start"] == [str(study)] and config["model"] == str(model)
    assert warm and warm[0].payload["studies"] == [str(study)]
    assert f"old winner holds: {lineage['old_winner_holds']}" in out
    from gptuner_core.report import write_report

    html = write_report(new, tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"re-tuned from <code>{study}</code>" in html


def test_retune_refuses_an_existing_study(study: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from models import SAMPLE

    assert main(["retune", str(study), "--model", str(SAMPLE), "--study", str(study)]) == 2
    assert "already holds a study" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["model", "dataset"])
def test_a_refused_retune_writes_nothing(bad: str, study: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Defect (issue 43 item 5): `retune ST --model … --study NEW` refused for a bad model or
    dataset left an empty NEW/lineage/ behind."""
    from models import SAMPLE

    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"not a model, not an npz")
    new = tmp_path / "new"
    argv = ["retune", str(study), "--model", str(garbage if bad == "model" else SAMPLE), "--study", str(new)]
    assert main([*argv, *(["--dataset", str(garbage)] if bad == "dataset" else [])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(garbage) in err and "Traceback" not in err, err
    assert not new.exists()
