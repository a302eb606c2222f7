"""Issue 39 item 3: a pairwise comparison that disagrees with the study verdict on the same pair
says how the two relate (it was shown under the green winner banner without a word)."""

from __future__ import annotations

from gptuner_core.records.pairwise import Comparison
from gptuner_core.views.compare import relation_line


WINNER = {"verdict": "winner", "number": 1, "speedup": 1.781, "ci": [1.098, 2.889],
          "significant": True, "message": "", "best": 1, "best_speedup": 1.781,
          "best_ci": [1.098, 2.889], "rounds": 8, "confidence": 0.95, "min_effect": 0.01}


def _cmp(verdict: str, *, reference: int = 0, candidate: int = 1) -> Comparison:
    return Comparison(reference=reference, candidate=candidate, verdict=verdict, speedup=1.379,
                      ci=(0.93, 2.04), rounds=6, max_rounds=6, method="t", min_effect=0.01,
                      stop_reason="max_rounds")


def test_a_comparison_that_disagrees_with_the_verdict_says_how_they_relate() -> None:
    line = relation_line(WINNER, _cmp("inconclusive"))
    assert line is not None
    assert "#1" in line and "1.781x" in line and "1.379x" in line
    assert "separate measurement" in line and "verdict" in line


def test_an_agreeing_or_unrelated_comparison_needs_no_word() -> None:
    assert relation_line(WINNER, _cmp("winner")) is None
    assert relation_line(WINNER, _cmp("inconclusive", candidate=2)) is None  # another pair
    assert relation_line(WINNER, _cmp("inconclusive", reference=3)) is None
    assert relation_line(None, _cmp("inconclusive")) is None

