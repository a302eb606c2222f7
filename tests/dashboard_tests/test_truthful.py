"""Issue 26: every failure is one line naming the real problem; every command, count and preview is true."""

from __future__ import annotations

import io

import numpy as np
import pytest

from gptuner_core.dashboard.inputs import parse_number
from gptuner_core.dashboard.workspace import UploadError
from gptuner_core.dashboard.workspace import save_upload


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@pytest.mark.parametrize(("data", "expected"), [
    (b"", "is empty (0 bytes)"),  # was: EOFError traceback
    (b"input,labels\n1,2\n", "is not a .npz archive"),  # was: "... allow_pickle=" message
    (_npz(input=np.full((4, 3), np.nan, np.float32)), "array 'input' holds only NaN values"),
    (_npz(input=np.array([{"a": 1}], dtype=object)), "pickled (object) arrays"),
])
def test_bad_dataset_uploads_name_the_real_problem(tmp_path, data, expected) -> None:
    with pytest.raises(UploadError) as info:
        save_upload(tmp_path, "fake.npz", data, kind="dataset")
    message = str(info.value)
    assert expected in message and "\n" not in message and "allow_pickle" not in message


def test_good_dataset_with_some_nan_is_kept(tmp_path) -> None:
    x = np.ones((4, 3), np.float32)
    x[0, 0] = np.nan
    assert save_upload(tmp_path, "ok.npz", _npz(input=x), kind="dataset").is_file()


def test_huge_epsilon_says_too_large() -> None:
    _, problem = parse_number("1e308", "ε", minimum=0, exclusive_min=True)
    assert "larger than 1e+12" in problem and "not a usable number" not in problem


def test_expression_problems_are_short_and_name_the_cause() -> None:
    from gptuner_core.dashboard import data
    from gptuner_core.views.builder import expression_problem

    db = data.knob_database("onnxruntime", "assets/cnn_digits.onnx", 0)
    assert "']' is missing" in expression_problem("-quant:mode=[off|qdq", db)
    huge = "-ort:intra_op_num_threads=[" + "|".join(str(i) for i in range(5000)) + "]"
    line = expression_problem(huge, db)
    assert len(line) <= 400 and "and 4,992 more" in line


def test_repro_command_carries_the_study_gate() -> None:
    """Defect: Route trace's repro command left the study's gate out; the CLI refused it
    (``no accuracy gate``)."""
    from gptuner_core.records import CandidateRecord
    from gptuner_core.views.trace import repro_commands

    config = {"model": "assets/mlp_digits.onnx", "backend": "onnxruntime", "epsilon": 0.05,
              "metric": "l1", "measurement": {"max_time_s": 0.5}}
    record = CandidateRecord(number=1, requested_route="-quant:mode=dynamic")
    command = repro_commands(config, record, study_dir="/ws/s")["gptuner"]
    assert "--epsilon 0.05" in command and "--metric l1" in command
    assert "--measure-option max_time_s=0.5" in command and "--max-candidates 1" not in command
    no_gate = repro_commands({**config, "epsilon": None, "no_gate": True}, record, study_dir="/s")
    assert "--no-gate" in no_gate["gptuner"]


def test_route_counts_never_exceed_the_space() -> None:
    """Defect: the knob explorer said random/tpe/gp/nsga2 = 49 for a 48-route space."""
    from gptuner_core.dashboard import data
    from gptuner_core.expressions import Expression
    from gptuner_core.views.builder import strategy_counts

    db = data.knob_database("onnxruntime", "assets/cnn_digits.onnx", 0)
    expr = Expression.parse("-quant:mode=[off|qdq|qoperator|dynamic] -quant:reduce_range=[off|on] "
                            "-quant:weight_type=[int8|int4] -ort:intra_op_num_threads=[0|1|2]", db)
    assert expr.count("full") == 48
    assert max(c.high for c in strategy_counts(expr) if c.high is not None) == 48  # None: no fixed count
    # the default route left out of the space is measured too: one more, never two
    apart = Expression.parse("-quant:mode=[qdq|dynamic] -quant:reduce_range=[off|on]", db)
    assert max(c.high for c in strategy_counts(apart) if c.high is not None) == 5


def test_duplicate_says_of_which_and_log_is_never_blank() -> None:
    """Defect: "#8: DUPLICATE" did not say of which candidate; Route trace's Log section was
    empty for candidates without a log of their own."""
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState
    from gptuner_core.views import trace

    dup = CandidateRecord(number=8, requested_route="-a=1", state=CandidateState.DUPLICATE,
                          duplicate_of=3)
    assert trace.state_line(dup).startswith("#8: DUPLICATE of #3")
    assert "#3" in trace.no_log_line(dup)
    plain = CandidateRecord(number=0, requested_route="", state=CandidateState.COMPLETE)
    assert "No log was kept for #0" in trace.no_log_line(plain)
