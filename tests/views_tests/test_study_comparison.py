"""Compare → Studies (issue 39 item 7's screenshots): the winner row is the verdict's headline
(never the sequential test's raw message), and the table is one column per study, one row per
field, so a static table can wrap every value."""

from __future__ import annotations

import pytest

from gptuner_core.records import Winner
from gptuner_core.views import study_comparison

from .conftest import ranked_study


RAW = ("route #6 is significantly faster than the default: 2.827x [2.480, 3.223] after 4 rounds "
       "(sequential test, 99.71% CI)")
WIN = {"verdict": "winner", "number": 6, "speedup": 2.827, "ci": [2.480, 3.223], "message": RAW,
       "best": 6, "best_speedup": 2.827, "best_ci": [2.480, 3.223], "rounds": 4,
       "confidence": 0.95}


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    return ranked_study(tmp_path_factory.mktemp("s"), 12, seed=3)


def test_winner_row_is_the_verdict_headline_with_its_confidence(ranked) -> None:
    """Defect: the row showed ``win["message"]`` ("... 99.71% CI") beside a verdict of 95 %."""
    line = study_comparison.study_line("a", {"backend": "torch"}, {}, {"winner": WIN}, ranked)
    headline = Winner.from_json(dict(WIN)).headline()
    assert line.winner.startswith(headline) and "95% confidence" in line.winner
    assert "99.71" not in line.winner and "sequential" not in line.winner
    none = study_comparison.study_line("b", {}, {}, {}, ranked)
    assert none.winner == "—"


def test_comparison_table_is_one_column_per_study(ranked) -> None:
    a = study_comparison.study_line("a", {"backend": "torch"}, {"device": "H200"}, {"winner": WIN}, ranked)
    b = study_comparison.study_line("b", {"backend": "onnxruntime"}, {}, {}, ranked)
    table = study_comparison.comparison_table([a, b])
    assert list(table.columns) == ["field", "a", "b"]
    fields = list(table["field"])
    assert fields[:3] == ["verdict", "backend", "version"]
    assert "screening best speed-up" in fields and "best ms" in fields
    row = table.set_index("field")
    assert row.loc["backend", "a"] == "torch" and row.loc["device", "a"] == "H200"
    assert row.loc["verdict", "a"] == a.winner
    assert row.loc["screening best speed-up", "a"].endswith("x")  # formatted text: nothing to cut
    assert all(isinstance(v, str) for v in table.to_numpy().ravel())
