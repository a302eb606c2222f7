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
