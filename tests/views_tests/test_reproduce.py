"""Issue 39 items 5-7: Route trace's Reproduce reproduces (the route against the study's default,
in a study marked as a repro that never becomes the page default), prints no checksum of an
artifact that was not kept, and a DUPLICATE's log pointer does not lead to a trace without one."""

from __future__ import annotations

import shlex

from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.views import trace


CONFIG = {"model": "assets/cnn_digits.onnx", "backend": "onnxruntime", "epsilon": 0.05}


def _expr(command: str) -> str:
    args = shlex.split(command)
    return args[args.index("--expr") + 1]


def test_the_repro_measures_the_route_against_the_default() -> None:
    rec = CandidateRecord(number=3, requested_route="-quant:mode=dynamic -ort:threads=1")
    command = trace.repro_commands(CONFIG, rec, study_dir="/ws/s")["gptuner"]
    # bracketed: a variable knob of one value, so #0 is the database default, #1 the route
    assert _expr(command) == "-quant:mode=[dynamic] -ort:threads=[1]"
    assert "--search full" in command and "/ws/s-repro-3" in command
    assert trace.is_repro("s-repro-3") and not trace.is_repro("s") and not trace.is_repro("repro")


def test_no_checksum_of_an_artifact_that_was_not_kept(tmp_path) -> None:
    rec = CandidateRecord(number=4, requested_route="-quant:mode=qdq",
                          state=CandidateState.ACCURACY_FAILED,
                          artifact_path=str(tmp_path / "gone.onnx"), artifact_sha256="ab")
    assert "artifact" not in trace.repro_commands(CONFIG, rec, study_dir=str(tmp_path))
    (tmp_path / "kept.onnx").write_bytes(b"x")
    kept = CandidateRecord(number=5, requested_route="-quant:mode=qdq",
                           artifact_path=str(tmp_path / "kept.onnx"), artifact_sha256="ab")
    assert "sha256sum" in trace.repro_commands(CONFIG, kept, study_dir=str(tmp_path))["artifact"]


def test_a_duplicates_log_line_follows_the_original_only_when_it_has_one() -> None:
    dup = CandidateRecord(number=7, requested_route="-a=1", state=CandidateState.DUPLICATE,
                          duplicate_of=1)
    assert "whose log is on its trace" in trace.no_log_line(dup, original_has_log=True)
    line = trace.no_log_line(dup, original_has_log=False)
    assert "whose log is on its trace" not in line and "tuner.log" in line and "#1" in line
