"""Fixtures for the dashboard AppTests: an empty workspace and one with a finished study."""

from __future__ import annotations

from pathlib import Path

import pytest

from gptuner_core.testing.synthetic_study import write_synthetic_study


ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
PAGES = sorted((ROOT / "pages").glob("*.py"))


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
