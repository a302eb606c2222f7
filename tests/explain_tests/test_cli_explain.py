"""``gptuner explain`` and ``gptuner diff`` on the real study: output and one-line errors."""

from __future__ import annotations

import pytest

from gptuner_core.cli import main


pytestmark = pytest.mark.slow


def test_explain_prints_effects_triage_and_layer_diff(cnn_study, capsys):
    assert main(["explain", str(cnn_study), "2"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()  # the study's verdict first (issue 25), then the candidate
    assert lines[0].startswith(("winner: ", "no winner: ", "screening pick"))
    assert lines[2].startswith("candidate #2 (COMPLETE) vs the default route #0")
    assert "main effects (value vs default; failures counted as failures):" in out
    assert "* -quant:mode" in out and "qdq" in out
    assert "every route with -quant:weight_type=int4 fails" in out
    assert "exclude with: --expr '-quant:mode=[off|qdq] -quant:weight_type=[int8]'" in out
    assert "layer diff #0 -> #2:" in out and "QLinearConv" in out and "/c2/conv/Conv" in out


def test_explain_without_number_uses_the_winner(cnn_study, capsys):
    from gptuner_core.explain import read_study

    winner = read_study(cnn_study).winner
    assert main(["explain", str(cnn_study)]) == 0
    assert capsys.readouterr().out.splitlines()[2].startswith(f"candidate #{winner} ")


def test_diff_lists_groups_with_noise(cnn_study, capsys):
    assert main(["diff", str(cnn_study), "0", "2", "--all"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(("winner: ", "no winner: ", "screening pick"))  # the verdict first
    assert out[2].startswith("#0: screening median ") and out[3].startswith("#2: screening median ")
    header = next(line for line in out if line.startswith("layer (ONNX origin)"))
    assert "delta ms" in header and "noise" in header
    assert any(line.startswith("/c2/conv/Conv (+1)") for line in out)


@pytest.mark.parametrize(("argv", "message"), [
    (["diff", "{study}", "0", "9"], "gptuner: error: diff: candidate #9 is not in"),
    (["diff", "{study}", "0", "3"], "gptuner: error: candidate(s) #3 of"),
    (["diff", "{study}", "0", "2", "--runs", "1"], "gptuner: error: diff: --runs must be at least 2"),
    (["explain", "{study}", "42"], "gptuner: error: explain: candidate #42 is not in"),
    (["explain", "{missing}"], "is not a study folder"),
])
def test_bad_input_is_one_line_without_traceback(cnn_study, tmp_path, capsys, argv, message):
    args = [a.format(study=cnn_study, missing=tmp_path / "nope") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
