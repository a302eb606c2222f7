"""The candidate picker offers a bounded list in a big study, with the needed candidates kept."""

from __future__ import annotations

from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.views.picker import MAX_OPTIONS
from gptuner_core.views.picker import candidate_choices


def _records(n: int) -> list[CandidateRecord]:
    return [CandidateRecord(number=i, requested_route=f"-ort:threads={i % 3}",
                            state=CandidateState.CRASHED if i % 97 == 5 else CandidateState.COMPLETE)
            for i in range(n)]


def test_small_study_offers_every_candidate() -> None:
    choices = candidate_choices(_records(50), keep=(7,))
    assert choices.numbers == tuple(range(50))
    assert not choices.truncated and choices.caption() == ""


def test_big_study_offers_a_bounded_list_with_the_kept_ones_first() -> None:
    recs = _records(100_000)
    choices = candidate_choices(recs, keep=(99_999, 0, None, 123_456))  # 123456 is not there
    assert len(choices.numbers) == MAX_OPTIONS
    assert choices.numbers[:2] == (99_999, 0)
    assert choices.truncated and "100,000" in choices.caption()


def test_search_finds_a_candidate_beyond_the_list() -> None:
    recs = _records(100_000)
    choices = candidate_choices(recs, query="#87654", keep=(0,))
    assert choices.numbers[0] == 87_654 and 0 in choices.numbers
    crashed = candidate_choices(recs, query="crashed")
    assert crashed.matched == sum(r.state is CandidateState.CRASHED for r in recs)
    assert all("CRASHED" in crashed.labels[n] for n in crashed.numbers)
    assert candidate_choices(recs, query="no such text").numbers == ()


def _timed(number: int, ms: float, route: str) -> CandidateRecord:
    from gptuner_core.records import LatencyStats

    lat = LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms,
                       cv=0.01, ci_low_ms=ms, ci_high_ms=ms, n_samples=10)
    return CandidateRecord(number=number, requested_route=route, state=CandidateState.COMPLETE,
                           latency=lat)


LONG = ("-torch:mode=reduce-overhead -torch:precision=fp32 -inductor:freezing=off "
        "-inductor:coordinate_descent_tuning=off -inductor:epilogue_fusion=on")


def test_short_labels_name_number_screening_speedup_and_knob_count() -> None:
    """Issue 39 item 7 (screenshots): a route of five knobs was cut by the select box; the label
    is now short and the page shows the full route below it. The speed-up is screening's (one
    process per route), so the label says so (issue item 2)."""
    recs = [_timed(0, 2.0, ""), _timed(5, 1.6, LONG),
            CandidateRecord(number=6, requested_route="-ort:threads=2",
                            state=CandidateState.BUILD_FAILED)]
    labels = candidate_choices(recs, route=False).labels
    assert labels[0] == "#0 · default route"
    assert labels[5] == "#5 · screening 1.25x · 5 knobs"
    assert labels[6] == "#6 · BUILD_FAILED · 1 knob"
    assert max(len(v) for v in labels.values()) < 40
