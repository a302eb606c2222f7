"""Issue 27: Results and Route trace show the losses per slice and the detection details."""

from __future__ import annotations

import dataclasses

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from gptuner_core.records import AccuracyResult
from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study
from tests.app_tests.conftest import APP


SCORES = "output0[:, 4:, :]"


def _study(tmp_path):
    ws = tmp_path / "ws"
    study = write_synthetic_study(ws / "detector", 6, seed=2)
    with open_store(study) as store:
        for rec in store.candidates():
            acc = AccuracyResult(metric="l2", losses={"output0": 1e-6, SCORES: 0.02 * rec.number},
                                 task_metric=1.0 - 0.1 * rec.number, task_metric_name="detection",
                                 task_details={"recall": 1.0 - 0.1 * rec.number, "mean_iou": 0.9})
            store.put_candidate(dataclasses.replace(rec, accuracy=acc))
    return ws


def test_results_table_and_route_trace_show_slices(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(_study(tmp_path)))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.STUDY] = "detector"
    at.session_state[state.CANDIDATE] = 3
    at.session_state["res_view"] = "Table"  # straight to the table (no figures to draw first)
    at.run()
    at.switch_page("app_pages/4_Results.py").run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if f"loss:{SCORES}" in d.value.columns)
    assert "task:recall" in table.columns
    assert sorted(table[f"loss:{SCORES}"].round(3)) == [0.0, 0.02, 0.04, 0.06, 0.08, 0.1]
    at.switch_page("app_pages/5_Route_trace.py").run()
    assert not at.exception, at.exception
    # a static table since issue 39 item 7 (it wraps): its values as the page shows them
    acc = next(d.value for d in at.table if "output" in d.value.columns)
    rows = dict(zip(acc["output"], acc["#3"], strict=True))
    assert float(rows[f"{SCORES} (l2)"]) == 0.06 and float(rows["detection: recall"]) == 0.7
