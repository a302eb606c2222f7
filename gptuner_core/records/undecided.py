"""What an undecided ("inconclusive") interval needs, in words: one text for the study's verdict
(``measurement.sequential``) and for Compare's pairwise comparison (``records.pairwise``)."""

from __future__ import annotations


def more_rounds(projected_rounds: int | None, has_interval: bool) -> str:
    """``about 40 rounds in all would decide`` / ``no interval yet: ...`` / ``more rounds would
    not decide it ...`` (the estimate sits on the threshold, so no width would clear it)."""
    if projected_rounds:
        return f"about {projected_rounds} rounds in all would decide"
    if not has_interval:
        return "no interval yet: more rounds are needed before one can be formed"
    return "more rounds would not decide it (the estimate sits on the threshold)"
