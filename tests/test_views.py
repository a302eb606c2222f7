"""Unit tests of the dashboard's pure view functions (no streamlit)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gptuner_core import views
from gptuner_core.knobs import KnobDatabase
from gptuner_core.knobs import diff_knob_databases
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats


def lat(ms: float) -> LatencyStats:
    return LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms * 0.9, p5_ms=ms * 0.95, p95_ms=ms * 1.1,
                        p99_ms=ms * 1.2, cv=0.02, ci_low_ms=ms * 0.98, ci_high_ms=ms * 1.02, n_samples=30)


def rec(n, route, state=CandidateState.COMPLETE, ms=None, loss=None, **kw) -> CandidateRecord:
    return CandidateRecord(
        number=n, requested_route=route, state=state,
        latency=lat(ms) if ms is not None else None,
        accuracy=AccuracyResult(metric="l2", losses={"out": loss}) if loss is not None else None,
        **kw,
    )


@pytest.fixture()
def records() -> list[CandidateRecord]:
    return [
        rec(0, "-a=0 -b=x", ms=10.0, loss=0.0),
        rec(1, "-a=1 -b=x", ms=8.0, loss=1e-4),
        rec(2, "-a=2 -b=x", CandidateState.ACCURACY_FAILED, ms=5.0, loss=5e-3),
        rec(3, "-a=0 -b=y", CandidateState.CRASHED, error="child killed by signal 11 (SIGSEGV)"),
        rec(4, "-a=1 -b=y", ms=9.0, loss=2e-4, speedup=1.2, speedup_ci=(1.1, 1.3)),
        rec(5, "-a=2 -b=y", CandidateState.ACCURACY_FAILED, loss=0.5),
    ]


class TestCandidatesFrame:
    def test_columns_and_knobs(self, records) -> None:
        """One row per record; knob columns come from the routes; missing speedup is computed."""
        df = views.candidates_frame(records)
        assert list(df["number"]) == [0, 1, 2, 3, 4, 5]
        assert list(df["knob:-a"]) == ["0", "1", "2", "0", "1", "2"]
        assert df.loc[1, "speedup"] == pytest.approx(10.0 / 8.0)
        assert df.loc[4, "speedup"] == pytest.approx(1.2)  # stored value wins
        assert df.loc[4, "speedup_ci_low"] == pytest.approx(1.1)
        assert math.isnan(df.loc[3, "median_ms"])
        assert views.knob_columns(df) == ["-a", "-b"]

    def test_empty(self) -> None:
        """No records gives an empty frame with the base columns."""
        df = views.candidates_frame([])
        assert df.empty and "median_ms" in df.columns


class TestEpsilon:
    def test_categories_at_configured_epsilon(self, records) -> None:
        """Eligible, accuracy-failed, crashed and 'passes but never timed' are told apart."""
        df = views.apply_epsilon(views.candidates_frame(records), records, 1e-3)
        assert list(df["category"]) == [
            views.ELIGIBLE, views.ELIGIBLE, views.ACCURACY_FAILED, views.FAILED,
            views.ELIGIBLE, views.ACCURACY_FAILED,
        ]
        assert views.winner(df)["number"] == 1

    def test_loosening_epsilon_reranks(self, records) -> None:
        """A larger ε admits #2 (stored loss 5e-3) and makes it the winner, with no re-run."""
        df = views.apply_epsilon(views.candidates_frame(records), records, 1e-2)
        assert df.loc[2, "category"] == views.ELIGIBLE
        assert views.winner(df)["number"] == 2
        assert df.loc[5, "category"] == views.ACCURACY_FAILED

    def test_epsilon_is_exclusive_like_trtexec(self, records) -> None:
        """A loss equal to ε fails (trtexec: fails if loss >= ε)."""
        df = views.apply_epsilon(views.candidates_frame(records), records, 1e-4)
        assert df.loc[1, "category"] == views.ACCURACY_FAILED
        assert views.winner(df)["number"] == 0

    def test_passing_but_untimed(self) -> None:
        """An accuracy-failed candidate never timed shows as not measured once ε admits it."""
        rs = [rec(0, "", ms=1.0, loss=0.0), rec(1, "-a=1", CandidateState.ACCURACY_FAILED, loss=0.5)]
        df = views.apply_epsilon(views.candidates_frame(rs), rs, 1.0)
        assert df.loc[1, "category"] == views.NOT_MEASURED

    def test_non_finite_loss_fails_and_reason_is_kept(self) -> None:
        """A NaN loss never passes the gate, and the reason names the output."""
        rs = [rec(0, "", ms=1.0, loss=0.0), rec(1, "-a=1", ms=0.5, loss=float("nan"))]
        df = views.apply_epsilon(views.candidates_frame(rs), rs, 1.0)
        assert df.loc[1, "category"] == views.ACCURACY_FAILED
        assert "'out'" in df.loc[1, "gate_reason"]

    def test_no_gate(self, records) -> None:
        """Without ε every timed, non-crashed candidate is eligible."""
        df = views.apply_epsilon(views.candidates_frame(records), records, None)
        assert (df["category"] == views.ELIGIBLE).sum() == 4

    def test_task_metric_drop(self) -> None:
        """max_drop excludes candidates whose task metric fell too far below the default's."""
        rs = [
            CandidateRecord(number=i, requested_route=f"-a={i}", state=CandidateState.COMPLETE,
                            latency=lat(10 - i),
                            accuracy=AccuracyResult(metric="l2", losses={}, task_metric=t,
                                                    task_metric_name="top1"))
            for i, t in enumerate([0.95, 0.94, 0.90])
        ]
        df = views.apply_epsilon(views.candidates_frame(rs), rs, None, task_metric="top1", max_drop=0.02)
        assert list(df["category"]) == [views.ELIGIBLE, views.ELIGIBLE, views.ACCURACY_FAILED]


class TestPareto:
    def test_front(self) -> None:
        """Dominated points are off the front; NaN latency never on it; NaN loss counts as 0."""
        mask = views.pareto_mask([1, 2, 3, 4, np.nan], [0.5, 0.1, 0.2, 0.0, 0.0])
        assert mask == [True, True, False, True, False]

    def test_ties_keep_one(self) -> None:
        assert views.pareto_mask([1, 1], [0.1, 0.1]) == [True, False]


def test_best_so_far(records) -> None:
    """Running minimum over eligible candidates in study order."""
    df = views.apply_epsilon(views.candidates_frame(records), records, 1e-3)
    hist = views.best_so_far(df)
    assert list(hist["number"]) == [0, 1, 4]
    assert list(hist["best_ms"]) == [10.0, 8.0, 8.0]


def test_filter_frame(records) -> None:
    """Filters combine category, text in route/error and knob values."""
    df = views.apply_epsilon(views.candidates_frame(records), records, 1e-3)
    assert list(views.filter_frame(df, categories=[views.FAILED])["number"]) == [3]
    assert list(views.filter_frame(df, text="SIGSEGV")["number"]) == [3]
    assert list(views.filter_frame(df, knob_values={"-b": ["y"]}, categories=[views.ELIGIBLE])["number"]) == [4]
    assert views.to_csv(df).startswith(b"number,state,route")


class TestFigures:
    def test_scatter_has_distinct_traces(self, records) -> None:
        """Eligible, accuracy-failed, failed and the Pareto front are separate traces; ε is a line."""
        df = views.apply_epsilon(views.candidates_frame(records), records, 1e-3)
        fig = views.accuracy_latency_figure(df, epsilon=1e-3)
        names = [t.name for t in fig.data]
        assert any(n.startswith("eligible (3)") for n in names)
        assert any(n.startswith("accuracy-failed (1)") for n in names)
        assert "crashed / failed, no latency (1)" in names  # #3
        assert "accuracy-failed, no latency (1)" in names  # #5 rejected before timing
        assert any(n.startswith("Pareto front") for n in names)
        assert fig.layout.shapes[0].y0 == 1e-3

    def test_speedup_error_bars(self, records) -> None:
        df = views.apply_epsilon(views.candidates_frame(records), records, 1e-3)
        bar = views.speedup_figure(df).data[0]
        assert list(bar.x)[0] == "#1"
        i = list(bar.x).index("#4")
        assert bar.error_y.array[i] == pytest.approx(0.1)
        assert bar.error_y.arrayminus[i] == pytest.approx(0.1)

    def test_speedup_bars_are_screening_and_count_routes_not_duplicates(self, records) -> None:
        """Issue 39 item 3: the bars are one process per route (labelled screening, not the
        verdict's interval), and a DUPLICATE (the same artifact as another) is not a route."""
        more = [*records, rec(7, "-a=1 -b=z", CandidateState.DUPLICATE, ms=8.0, loss=1e-4,
                             duplicate_of=1)]
        df = views.apply_epsilon(views.candidates_frame(more), more, 1e-3)
        fig = views.speedup_figure(df)
        assert "#7" not in list(fig.data[0].x)
        title = fig.layout.title.text
        assert "screening" in title.lower() and "95 % CI" not in title
        assert f"top {len(fig.data[0].x)} routes" in title
        assert "screening" in fig.layout.yaxis.title.text

    def test_latency_histograms_are_not_squeezed_by_outliers(self) -> None:
        """Issue 39 item 12: a few 45 ms outliers squeezed both distributions into 0-1 ms."""
        rng = np.random.default_rng(0)
        a = list(rng.normal(0.5, 0.02, 300)) + [45.0, 30.0]
        b = list(rng.normal(0.6, 0.02, 300)) + [20.0]
        fig = views.overlaid_samples_figure({"#0": a, "#1": b})
        low, high = fig.layout.xaxis.range
        assert high < 1.0 and low > 0.3  # the bulk of both, not the outliers
        assert "outside" in fig.layout.title.text  # and the clipped samples are counted
        assert sum(len(t.x) for t in fig.data) == len(a) + len(b)  # nothing dropped

    def test_overview_puts_the_verdict_beside_the_study(self) -> None:
        """Issue 39 item 9: the verdict column was cut and the numbers off-screen: the verdict,
        the counts and the latency come first, the long provenance columns after them."""
        s = views.study_summary("s", config={}, meta={}, n_finished=3)
        cols = list(views.studies_frame([s]).columns)
        assert cols[:5] == ["study", "status", "verdict", "candidates", "best ms"]

    def test_knob_effect_and_histograms(self, records) -> None:
        df = views.apply_epsilon(views.candidates_frame(records), records, 1e-3)
        fig = views.knob_effect_figure(df, "-a")
        # defect: accuracy-failed candidates were dropped, so value 2 (both accuracy-failed) was
        # missing; now every value shows with its failures counted
        cats = list(fig.layout.xaxis.categoryarray)
        assert cats == ["0 (n=2; 1 crashed / failed)", "1 (n=2)", "2 (n=2; 2 accuracy-failed)"]
        assert sorted(t.name for t in fig.data) == ["accuracy-failed", "eligible",
                                                    "no latency (failed / rejected)"]
        assert len(views.samples_histogram([1.0, 1.1, 1.2]).data[0].x) == 3
        assert len(views.overlaid_samples_figure({"#0": [1.0], "#1": [2.0]}).data) == 2
        assert len(views.history_figure(views.best_so_far(df)).data) == 2


class TestTrace:
    def test_trace_fields(self) -> None:
        r = rec(3, "-a=1", ms=2.0, loss=0.1, artifact_size=2048, speedup=1.5, speedup_ci=(1.4, 1.6))
        table = dict(views.trace_fields(r).values.tolist())
        assert table["artifact size"] == "2.0 KiB"
        # the screening speed-up (one process per route), labelled so beside the verdict's
        # (issue 39 item 2; the route trace said "speedup vs default": 2.148x under a verdict of
        # 2.827x)
        assert table["screening speed-up vs default"] == "1.500x (CI 1.400–1.600)"
        assert table["requested route"] == "-a=1"

    def test_route_diff(self) -> None:
        """Knobs missing from a route show as (default); differences are flagged."""
        df = views.route_diff_frame({"#1": "-a=1 -b=x", "#2": "-a=2"})
        rows = {r["knob"]: r for r in df.to_dict("records")}
        assert rows["-a"]["differs"] and rows["-b"]["#2"] == "(default)"
        assert not views.route_diff_frame({"r": "-a=1", "e": "-a=1"})["differs"].any()

    def test_layers_and_layer_diff(self) -> None:
        a = {"layers": [{"name": "conv", "time_ms": 1.0}, {"name": "gemm", "time_ms": 2.0}]}
        b = {"layers": [{"name": "conv", "time_ms": 0.5}]}
        assert len(views.layers_frame(a)) == 2
        assert views.layers_frame({"other": 1}) is None
        ops = views.layers_frame({"info": {"op_counts": {"Gemm": 4, "Relu": 3}}})
        assert ops.to_dict("records") == [{"name": "Gemm", "count": 4}, {"name": "Relu", "count": 3}]
        diff = views.layer_diff_frame({"#1": a, "#2": b})
        assert list(diff.columns) == ["layer", "#1 time_ms", "#2 time_ms"]
        assert views.layer_diff_frame({"#1": a, "#2": {}}) is None

    def test_accuracy_frame(self) -> None:
        df = views.accuracy_frame([rec(0, "", loss=0.1), rec(1, "", loss=0.2)])
        assert list(df.columns) == ["output", "#0", "#1"]
        assert df.loc[0, "#1"] == 0.2

    def test_repro(self) -> None:
        cmds = views.repro_commands({"model": "m.onnx", "backend": "onnxruntime"},
                                    rec(2, "-a=1 -b=x", artifact_path="/s/a.onnx"),
                                    study_dir="/w/s", backend_repro={"trtexec": "trtexec ..."})
        assert cmds["gptuner"] == ("gptuner tune m.onnx --backend onnxruntime --expr '-a=[1] -b=[x]' "
                                   "--search full --study /w/s-repro-2")
        assert cmds["trtexec"] == "trtexec ..."


class TestKnobs:
    DB = KnobDatabase.from_json({"tuner_version": "1", "tuner_options": [
        {"option": "-kgen:tiling", "allowed_values": "-kgen:tiling=[0|1|2]", "default_value": "1",
         "help": "Tile size heuristics"},
        {"option": "-opt:fusion", "allowed_values": "-opt:fusion=[on|off]", "default_value": "on",
         "help": "Fuse pointwise ops"},
        {"option": "-ws", "allowed_values": "-ws=int32_t", "default_value": "0", "help": "workspace"},
    ]})

    def test_frame_and_search(self) -> None:
        df = views.knob_frame(self.DB)
        assert list(df["allowed"]) == ["0|1|2", "on|off", "any int32_t"]
        assert list(views.search_knobs(df, "fuse")["knob"]) == ["-opt:fusion"]
        assert list(views.search_knobs(df, "", ["kgen"])["knob"]) == ["-kgen:tiling"]
        assert list(views.search_knobs(df, "tile heur")["knob"]) == ["-kgen:tiling"]

    def test_expression_and_counts(self) -> None:
        from gptuner_core.expressions import Expression

        text = views.expression_text({"-kgen:tiling": ["0", "2"], "-opt:fusion": ["off"], "-ws": []})
        assert text == "-kgen:tiling=[0|2] -opt:fusion=off"
        expr = Expression.parse("-kgen:tiling=[0|1|2] -opt:fusion=[on|off]", self.DB)
        assert views.route_counts(expr, 4) == {"fast": 4, "full": 6, "sampled (budget)": 4}

    def test_diff(self) -> None:
        new = KnobDatabase.from_json({"tuner_version": "2", "tuner_options": [
            {"option": "-kgen:tiling", "allowed_values": "-kgen:tiling=[0|1|2|3]", "default_value": "2"},
            {"option": "-new", "allowed_values": "-new=[a|b]", "default_value": "a"},
        ]})
        df = views.diff_frame(diff_knob_databases(self.DB, new))
        assert sorted(df["change"]) == ["added", "default changed", "removed", "removed", "values changed"]
        assert list(df.columns) == ["change", "knob", "old (1)", "new (2)"]


class TestStudies:
    def test_stale_and_status(self) -> None:
        assert views.stale_reasons({"host": "a", "device": "x"}, {"host": "b"}) == ["host: a → b"]
        assert views.stale_reasons({"host": "a"}, {"device": "y"}) == []
        assert views.effective_status("running", False) == "interrupted"
        assert views.effective_status("finished", None) == "finished"

    def test_summary_frame(self) -> None:
        s = views.study_summary(
            "s1", config={"model": "/m/cnn.onnx", "backend": "onnxruntime", "search": "fast"},
            meta={"status": "finished", "progress": {"done": 5, "total": 7},
                  "winner": {"number": 3, "speedup": 1.25, "ci": [1.2, 1.3], "significant": True}},
            n_finished=5, stale=["host: a → b"],
        )
        row = views.studies_frame([s]).iloc[0]
        assert row["model"] == "cnn.onnx" and row["candidates"] == "5/7"
        assert row["verdict"] == "winner: route #3, 1.250x faster [1.200, 1.300]"
        assert row["stale"].startswith("⚠")

    def test_live_progress(self) -> None:
        p = views.live_progress({"done": 3, "total": 12, "current": 4, "phase": "build",
                                 "started_at": 100.0, "eta_s": 125}, now=190.0)
        assert p.fraction == 0.25 and p.eta == "2m05s" and p.phase == "build"
        assert p.text == "3/12 routes · elapsed 1m30s"
        assert views.live_progress(None).eta == "—"

    def test_recent_failures(self, records) -> None:
        df = views.recent_failures(records, n=2)
        assert list(df["number"]) == [5, 3]


class TestHealthViews:
    def test_drift_and_normalization(self):
        """Drift is relative to candidate 0's own measurement; normalization uses the nearest."""
        from gptuner_core.records import CandidateRecord
        from gptuner_core.records import CandidateState
        from gptuner_core.records import LatencyStats

        def lat(ms):
            return LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms,
                                p99_ms=ms, cv=0.01, ci_low_ms=ms, ci_high_ms=ms, n_samples=20)

        recs = [
            CandidateRecord(number=0, requested_route="", state=CandidateState.COMPLETE,
                            latency=lat(1.0), finished_at=100.0, speedup=1.0),
            CandidateRecord(number=1, requested_route="-a=1", state=CandidateState.COMPLETE,
                            latency=lat(1.1), finished_at=200.0, speedup=1 / 1.1),
        ]
        baselines = [{"after_candidate": 1, "time": 201.0, "median_ms": 1.2}]
        df = views.drift_frame(recs, baselines)
        assert list(df["after_candidate"]) == [0, 1]
        assert df["drift_pct"].iloc[1] == pytest.approx(20.0)
        norm = views.normalized_frame(recs, baselines)
        row = norm[norm["number"] == 1].iloc[0]
        assert row["normalized_speedup"] == pytest.approx(1.2 / 1.1)
        assert views.drift_figure(df).data


def test_live_progress_stops_the_clock_when_finished():
    """A finished study's elapsed time ends at finished_at, not now."""
    p = views.live_progress({"done": 4, "total": 4, "started_at": 100.0, "finished_at": 160.0},
                            now=10_000.0)
    assert "elapsed 1m00s" in p.text


def test_live_progress_reads_the_tuners_revalidation_rounds():
    """Live showed 'Phase idle, ETA 0s' during minutes of re-validation."""
    p = views.live_progress({"done": 8, "total": 8, "phase": "revalidation", "rounds_done": 3,
                             "rounds_total": 12, "eta_s": 0.0}, status="running")
    assert p.phase == "re-validation round 3/12" and p.eta == "at most 9 rounds"  # issue 39 item 10: never "—" for minutes and p.fraction == 0.25
