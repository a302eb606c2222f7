"""``state_counts`` answers from an index, and agrees with the records."""

from __future__ import annotations

from collections import Counter

from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study


def test_state_counts_match_the_records(tmp_path) -> None:
    study = write_synthetic_study(tmp_path / "s", 120, write_logs=False)
    with open_store(study, readonly=True) as store:
        assert store.state_counts() == dict(Counter(r.state.value for r in store.candidates()))
        assert sum(store.state_counts().values()) == 120
