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


def open_page(ws: Path, study: str, page: str, monkeypatch: pytest.MonkeyPatch, *, timeout: float = 60):  # noqa: ANN201 - AppTest
    """The app on workspace ``ws`` with ``study`` picked, switched to ``app_pages/<page>``, run
    once without an exception."""
    from streamlit.testing.v1 import AppTest

    from gptuner_core.dashboard import state

    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    at.session_state[state.STUDY] = study
    at.run()
    at.switch_page(f"app_pages/{page}").run()
    assert not at.exception, at.exception
    return at
