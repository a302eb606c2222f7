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
