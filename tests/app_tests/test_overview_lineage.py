"""Overview shows where a study came from: the retune parent recorded by ``gptuner retune``
(``lineage`` meta) and the studies it was warm-started from."""

from __future__ import annotations

import json
import sqlite3

from streamlit.testing.v1 import AppTest

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
