"""Fixtures for the dashboard AppTests: an empty workspace and one with a finished study."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.testing.synthetic_study import write_synthetic_study


ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
PAGES = sorted((ROOT / "app_pages").glob("*.py"))


@pytest.fixture(scope="session")
def finished_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace holding one finished study written through the real SQLite store API."""
    ws = tmp_path_factory.mktemp("ws_finished")
    write_synthetic_study(ws / "digits-study", 40, seed=1)
    return ws


@pytest.fixture()
def empty_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws_empty"
    ws.mkdir()
    return ws


def open_new_run_sections(at, *, strategy: str | None = None) -> None:
    """Open New run's collapsible sections (they draw their inputs only while open): the next
    run draws backend options, the strategy's options and the advanced settings."""
    from gptuner_core.strategies import DEFAULT_STRATEGY

    for key in ("nr_bopt_open", "nr_adv_open", f"nr_sopt_open_{strategy or DEFAULT_STRATEGY}"):
        at.session_state[key] = True
