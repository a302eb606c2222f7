"""Issue 27: losses per slice and built-in task-metric details, as Results and Route trace show them."""

from __future__ import annotations

from gptuner_core import views
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.storage import open_store


SCORES = "output0[:, 4:, :]"


def records() -> list[CandidateRecord]:
    def acc(whole: float, scores: float, recall: float) -> AccuracyResult:
        return AccuracyResult(metric="cos", losses={"output0": whole, SCORES: scores}, task_metric=recall,
                              task_metric_name="detection(conf=0.25)",
                              task_details={"recall": recall, "precision": 1.0, "mean_iou": 0.9})
    return [
        CandidateRecord(number=0, requested_route="-quant:mode=off", state=CandidateState.COMPLETE,
                        accuracy=acc(0.0, 0.0, 1.0)),
        CandidateRecord(number=1, requested_route="-quant:mode=qdq", state=CandidateState.ACCURACY_FAILED,
                        accuracy=acc(1.2e-6, 0.047, 0.8)),
    ]


def test_results_frame_has_a_column_per_slice_and_per_task_detail() -> None:
    df = views.candidates_frame(records())
    assert list(df[f"loss:{SCORES}"]) == [0.0, 0.047]
    assert list(df["loss:output0"]) == [0.0, 1.2e-6]
    assert list(df["task:recall"]) == [1.0, 0.8]


def test_route_trace_rows_per_slice_and_per_detail() -> None:
    df = views.accuracy_frame(records()[1:]).set_index("output")
    assert df.loc[f"{SCORES} (cos)", "#1"] == 0.047
    assert df.loc["output0 (cos)", "#1"] == 1.2e-6
    assert df.loc["detection: recall", "#1"] == 0.8


def test_slice_losses_and_details_survive_the_store(tmp_path) -> None:
    with open_store(tmp_path) as store:
        for rec in records():
            store.put_candidate(rec)
    with open_store(tmp_path, readonly=True) as store:
        back = store.candidates()
    assert [r.accuracy for r in back] == [r.accuracy for r in records()]
