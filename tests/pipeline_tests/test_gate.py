"""``gptuner gate`` end to end on the bundled sample: real builds and measurements in fresh
processes against the bundle's artifact; exit codes 0 / 1 / 2 and the three report formats."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROUTE
from conftest import measure_args
from models import SAMPLE
from models import fixed_batch
from models import slowed

from gptuner_core.cli import main


pytestmark = pytest.mark.slow

#: the slowed model's extra branch: ~17x slower than the sample (issue 41 item 2). The default
#: width (2048, ~5x) was once inconclusive beside two CPU hogs and 4 test workers; a regression
#: many times the machine's noise makes "is it a regression" no timing question.
SLOW_WIDTH = 4096


def _gate(bundle: Path, model: Path, tmp_path: Path, *extra: str) -> tuple[int, dict]:
    """A 50 % practical threshold: the 2 shared cores of the test machine give per-process
    medians that wander by tens of percent; the slowed model is about 4x slower."""
    out = tmp_path / "gate.json"
    rc = main(["gate", str(bundle), "--model", str(model), *measure_args(), "--threshold", "0.5",
               "--max-rounds", "20", "--json", str(out), "--junit", str(tmp_path / "gate.xml"),
               "--markdown", str(tmp_path / "gate.md"), *extra])
    return rc, json.loads(out.read_text()) if out.exists() else {}


def test_unchanged_model_passes(bundle: Path, tmp_path: Path) -> None:
    rc, res = _gate(bundle, SAMPLE, tmp_path)
    # behaviour, not a timing outcome (issue 24): the same model is never a regression; on a busy
    # machine the interval may stay wide (inconclusive, exit 3) instead of passing
    assert (rc, res["decision"]) in ((0, "no_change"), (0, "improvement"), (3, "inconclusive")), res
    assert res["accuracy"]["losses"]["logits"] == 0
    suite = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and suite.get("tests") == "1"
    md = (tmp_path / "gate.md").read_text()
    assert "no change" in md or "improvement" in md or (rc == 3 and "inconclusive" in md)


def test_slower_model_is_a_regression(bundle: Path, tmp_path: Path) -> None:
    rc, res = _gate(bundle, slowed(tmp_path / "slow.onnx", width=SLOW_WIDTH), tmp_path)
    assert rc == 1, res
    # the decision's own rule: slower with confidence, by more than the threshold (the interval
    # at load 18 was [1.026, 476.6] around 44x: its width is the machine's)
    assert res["decision"] == "regression" and res["ci"][0] > 1.0 and res["ratio"] > 1.5, res
    assert res["accuracy"]["losses"]["logits"] < 1e-9  # the no-op branch keeps the outputs
    case = ET.parse(tmp_path / "gate.xml").getroot().find("testsuite/testcase")
    assert case.find("failure").get("type") == "regression"
    assert "**regression**" in (tmp_path / "gate.md").read_text()


def test_an_undecided_gate_on_a_busy_machine_says_so(bundle: Path, tmp_path: Path) -> None:
    """Issue 41 item 4 on the gate: two CPU hogs beside its rounds, and a gate that cannot decide
    in 2 rounds at 99.99 % confidence: the decision line says the machine was too busy, and what
    to do, before the interval (not "run more rounds")."""
    import subprocess

    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(2)]
    try:
        rc, res = _gate(bundle, SAMPLE, tmp_path, "--min-rounds", "2", "--max-rounds", "2",
                        "--threshold", "0.01", "--confidence", "0.9999")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert rc == 3 and res["decision"] == "inconclusive", res
    assert res["message"].startswith("inconclusive: the machine was too busy to decide (other programs ran "
                                     "during "), res["message"]
    assert "close them and run the gate again" in res["message"]
    assert res["busy_share"] > 0.2
    assert "too busy" in (tmp_path / "gate.md").read_text()


def test_a_busy_note_only_for_an_undecided_gate() -> None:
    from gptuner_core.bundle.gate import Decision
    from gptuner_core.bundle.gate import with_busy

    undecided = (Decision.INCONCLUSIVE, "inconclusive: the interval neither rules out nor shows ...")
    assert with_busy(*undecided, [True, True, False]) == (
        "inconclusive: the machine was too busy to decide (other programs ran during 66.7% of the "
        "measurements): close them and run the gate again; the interval neither rules out nor shows ...", 0.667)
    assert with_busy(*undecided, [False] * 9 + [True]) == (undecided[1], None)  # 10 %: not busy
    assert with_busy(*undecided, []) == (undecided[1], None)
    decided = (Decision.REGRESSION, "regression: ...")
    assert with_busy(*decided, [True, True]) == ("regression: ...", None)  # decided: nothing to add


def test_accuracy_breaking_route_fails_with_the_reason(bundle: Path, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    rc, res = _gate(bundle, SAMPLE, tmp_path, "--route", f"{ROUTE} -quant:mode=dynamic")
    assert rc == 1
    assert res["decision"] == "accuracy_failed" and res["rounds"] == 0
    assert "l2 loss" in res["message"] and "epsilon 0.0001" in res["message"]
    assert "accuracy gate failed" in capsys.readouterr().out


def test_mismatched_fingerprint_is_refused_naming_the_fields(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    rc, res = _gate(bundle, fixed_batch(tmp_path / "b16.onnx", 16), tmp_path)
    assert rc == 2 and res == {}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fingerprints differ in inputs" in err
    assert "['batch', 64]" in err and "[16, 64]" in err and "--allow-mismatch" in err


def test_usage_errors_exit_2(bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", str(bundle), "--model", str(SAMPLE), "--threshold", "5"]) == 2
    assert "--threshold must be a number in (0, 1)" in capsys.readouterr().err
    assert main(["gate", str(bundle), "--model", str(tmp_path / "none.onnx")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["gate", str(bundle), "--model", str(SAMPLE), "--route", "-bogus:knob=1"]) == 2
    assert "--route '-bogus:knob=1' does not fit model" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["gate", str(bundle), "--model", str(SAMPLE), "--junit", str(tmp_path / "file" / "g.xml")]) == 2
    assert "--junit" in capsys.readouterr().err and not list(tmp_path.glob("**/g.xml"))


@pytest.fixture(scope="module")
def slow_study(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A one-route study of the slowed model: (model, study)."""
    tmp = tmp_path_factory.mktemp("slow")
    slow = slowed(tmp / "slow.onnx", width=SLOW_WIDTH)
    study = tmp / "slow-study"
    assert main(["tune", str(slow), "--dataset", str(dataset), "--batch-size", "16", "--backend",
                 "onnxruntime", "--expr", ROUTE, "--epsilon", "1e-4", "--study", str(study), *measure_args(),
                 "--profile-runs", "0", "--quiet"]) == 0
    return slow, study


def test_a_given_artifact_is_measured_itself(bundle: Path, slow_study: tuple[Path, Path], tmp_path: Path) -> None:
    """--artifact: the given engine is what is timed (not the bundle's, whose build info the
    ONNX Runtime loader would otherwise follow): a slower model's artifact is a regression."""
    slow, study = slow_study
    rc, res = _gate(bundle, slow, tmp_path, "--artifact", str(study / "candidates" / "00000" / "artifact"))
    assert rc == 1 and res["decision"] == "regression", res
    assert res["accuracy"] is None and res["notes"] == ["accuracy not checked: --artifact gives an artifact, not outputs"]


def test_a_faster_model_is_an_improvement(slow_study: tuple[Path, Path], tmp_path: Path) -> None:
    _, study = slow_study
    assert main(["bundle", str(study), "-o", str(tmp_path / "slow-bundle")]) == 0
    rc, res = _gate(tmp_path / "slow-bundle", SAMPLE, tmp_path)
    # Behaviour, not a timing outcome (issue 24: at load 4-10 the interval was [0.048, 1.230]):
    # a faster model is never a regression, and the decision is the one its interval implies.
    assert rc in (0, 3) and res["decision"] != "regression", res
    expected = {0: ("improvement", "no_change"), 3: ("inconclusive",)}[rc]
    assert res["decision"] in expected, res
    if res["decision"] == "improvement":
        assert res["ci"][1] < 1 / 1.5, res
    elif res["decision"] == "no_change":
        assert res["ci"][1] >= 1 / 1.5 and res["ci"][0] < 1.5, res
    assert f"**{res['decision'].replace('_', ' ')}**" in (tmp_path / "gate.md").read_text()


def test_a_spent_time_budget_is_inconclusive_exit_3(bundle: Path, tmp_path: Path) -> None:
    """The time budget ends the rounds before the first look: no decision, exit 3."""
    rc, res = _gate(bundle, SAMPLE, tmp_path, "--time-budget", "0.1s")
    assert rc == 3 and res["decision"] == "inconclusive" and res["rounds"] < 4, res
    assert ET.parse(tmp_path / "gate.xml").getroot().find("testsuite/testcase/skipped") is not None


def test_a_foreign_artifact_is_one_line(bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "junk").mkdir()
    assert main(["gate", str(bundle), "--model", str(SAMPLE), "--artifact", str(tmp_path / "junk")]) == 2
    err = capsys.readouterr().err
    assert "is not an ONNX Runtime artifact" in err and "Traceback" not in err


def test_the_gate_measures_under_the_device_lock(bundle: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.device_lock import measuring_devices

    with DeviceLock(measuring_devices("cpu"), study="another study"):
        rc, res = _gate(bundle, SAMPLE, tmp_path, "--lock-timeout", "1")
    assert rc == 2 and res == {}
    err = capsys.readouterr().err
    assert "waiting for device" in err and "held by study another study" in err and "still busy after 1 s" in err


def test_gate_on_another_dataset(bundle: Path, tmp_path: Path) -> None:
    """--dataset: golden outputs come from the bundle's route rebuilt on the bundled model, and
    both sides are measured on the new inputs; the unchanged model passes, a breaking route fails."""
    from models import subset

    data = subset(tmp_path / "rows32.npz", 32)
    assert (bundle / "model" / SAMPLE.name).is_file()
    rc, res = _gate(bundle, SAMPLE, tmp_path, "--dataset", str(data), "--max-rounds", "4")
    assert res["accuracy"]["losses"]["logits"] == 0, res  # golden = the rebuilt baseline's outputs
    # the point is the accuracy above; which timing decision 4 rounds reach is timing's (with two
    # CPU hogs beside 4 test workers the unchanged model was once called a 5x regression)
    assert (rc, res["decision"]) in ((0, "no_change"), (0, "improvement"), (3, "inconclusive"),
                                     (1, "regression")), res
    rc, res = _gate(bundle, SAMPLE, tmp_path, "--dataset", str(data), "--route", f"{ROUTE} -quant:mode=dynamic")
    assert rc == 1 and res["decision"] == "accuracy_failed", res
