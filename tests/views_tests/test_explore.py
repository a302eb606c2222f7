"""optuna-dashboard parity views: parallel coordinates, timeline, EDF, study comparison."""

from __future__ import annotations

import pytest

from gptuner_core import views
from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study
from gptuner_core.views import explore
from gptuner_core.views import study_comparison


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    path = write_synthetic_study(tmp_path_factory.mktemp("s") / "st", 30, seed=2, write_logs=False)
    with open_store(path, readonly=True) as store:
        records = store.candidates(with_samples=False)
    ranked = views.apply_epsilon(views.candidates_frame(records), records, 1e-3)
    return records, ranked


def test_parallel_coordinates_over_knobs(study) -> None:
    _, ranked = study
    labels = [a.label for a in explore.parallel_coordinates_info(ranked).axes]
    assert labels[:2] == ["-ort:graph_optimization_level", "-ort:intra_op_threads"]
    assert "median ms" in labels and "log10 loss" in labels


def test_timeline_has_build_and_measure_and_revalidation(study) -> None:
    records, _ = study
    end = max(r.finished_at for r in records if r.finished_at)
    frame = explore.timeline_frame(records, [{"time": end + 30.0, "rounds": [1, 2, 3]}],
                                   [{"time": end - 10.0, "median_ms": 1.0}])
    assert {"build", "measure", "re-validation", "re-measure default"} <= set(frame["phase"])
    fig = explore.timeline_figure(frame)
    assert {t.name for t in fig.data} >= {"build", "measure", "re-validation"}


def test_edf_is_thinned_and_monotone() -> None:
    x, y = explore.edf_points([float(i % 97) for i in range(10_000)], max_points=500)
    assert len(x) <= 500 and y[-1] == 1.0 and x == sorted(x)


def test_compare_two_studies(study) -> None:
    _, ranked = study
    line = study_comparison.study_line("a", {"backend": "onnxruntime"}, {"backend_version": "1.20"},
                              {"winner": {"message": "#3 wins"}}, ranked)
    frame = study_comparison.comparison_frame([line, line])
    # the ratio of two screening medians: labelled screening (issue 39 item 3)
    assert list(frame["study"]) == ["a", "a"] and frame["screening best speed-up"].iloc[0] > 0
    fig = explore.edf_figure({"a": ranked, "b": ranked})
    assert len(fig.data) == 2
    assert len(explore.best_so_far_figure({"a": ranked}).data) == 1
    assert len(explore.landing_figure(ranked).data) >= 2
