"""Shared fixtures of the views tests: a synthetic study's candidates, ranked as the pages rank them."""

from __future__ import annotations

import pytest

from gptuner_core import views
from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study


def ranked_study(folder, candidates: int, seed: int):
    """The candidates frame of a synthetic study of ``candidates`` routes, with ε 1e-3 applied."""
    path = write_synthetic_study(folder / "st", candidates, seed=seed, write_logs=False)
    with open_store(path, readonly=True) as store:
        records = store.candidates(with_samples=False)
    return views.apply_epsilon(views.candidates_frame(records), records, 1e-3)


@pytest.fixture(scope="module")
def ranked(tmp_path_factory):
    """30 candidates, seed 2."""
    return ranked_study(tmp_path_factory.mktemp("s"), 30, seed=2)
