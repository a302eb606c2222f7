"""Overview shows where a study came from: the retune parent recorded by ``gptuner retune``
(``lineage`` meta) and the studies it was warm-started from."""

from __future__ import annotations

import json
import sqlite3

from streamlit.testing.v1 import AppTest

from gptuner_core import views
from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study
from tests.app_tests.conftest import APP


def test_overview_shows_lineage(tmp_path, monkeypatch) -> None:
    ws = tmp_path / "ws"
    write_synthetic_study(ws / "old", 6, seed=1)
    new = write_synthetic_study(ws / "new", 6, seed=2)
    with open_store(new) as store:
        store.set_meta("lineage", {"from": str(ws / "old"), "old_winner_holds": False})
        cfg = dict(store.config())
    cfg["warm_start"] = [str(ws / "old")]
    with sqlite3.connect(new / "study.sqlite") as conn:
        conn.execute("UPDATE study SET config = ? WHERE id = 1", (json.dumps(cfg),))
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value.set_index("study")
    assert table.loc["new", "lineage"] == ("re-tuned from old (old winner does not hold); "
                                           "warm-started from old")
    assert table.loc["old", "lineage"] == ""


def test_overview_grid_fits_and_long_texts_wrap_below(tmp_path, monkeypatch) -> None:
    """Issue 39 item 7 (screenshots): the grid cut the verdict and pushed columns off-screen.
    Now it shows the short columns, each as wide as its content; the lineage, stale reasons and
    messages are in a static table below, which wraps."""
    ws = tmp_path / "ws"
    write_synthetic_study(ws / "old", 6, seed=1)
    new = write_synthetic_study(ws / "new", 6, seed=2)
    with open_store(new) as store:
        store.set_meta("lineage", {"from": str(ws / "old"), "old_winner_holds": False})
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception, at.exception
    grid = at.dataframe[0]
    assert list(grid.proto.column_order) == list(views.STUDY_GRID)
    config = json.loads(grid.proto.columns)
    verdicts = grid.value["verdict"].tolist()
    assert config["verdict"]["width"] >= max(len(v) for v in verdicts) * 7
    notes = at.table[0].value
    assert "lineage" in notes.columns and "new" in notes["study"].tolist()
    assert "re-tuned from old" in notes.set_index("study").loc["new", "lineage"]
