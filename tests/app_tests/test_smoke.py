"""Every page renders without an exception on an empty workspace and on a finished study."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app_tests.conftest import APP
from tests.app_tests.conftest import PAGES


def _run(page, workspace, monkeypatch) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(workspace))
    at = AppTest.from_file(str(APP), default_timeout=30).run()
    if page != APP:
        at.switch_page(str(page.relative_to(APP.parent))).run()
    return at


PAGE_IDS = [p.name for p in [APP, *PAGES]]


@pytest.mark.parametrize("page", [APP, *PAGES], ids=PAGE_IDS)
def test_page_on_empty_workspace(page, empty_workspace, monkeypatch) -> None:
    """No exception and no error box when the workspace has no study."""
    at = _run(page, empty_workspace, monkeypatch)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("page", [APP, *PAGES], ids=PAGE_IDS)
def test_page_on_finished_study(page, finished_workspace, monkeypatch) -> None:
    """No exception and no error box on a workspace with a finished study."""
    at = _run(page, finished_workspace, monkeypatch)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.fixture(scope="module")
def h200_workspace(tmp_path_factory: pytest.TempPathFactory):
    """The real torch.compile study recorded on an NVIDIA H200 (examples/studies/torch_h200)."""
    import shutil

    ws = tmp_path_factory.mktemp("ws_h200")
    shutil.copytree(APP.parent / "examples" / "studies" / "torch_h200", ws / "torch_h200")
    return ws


@pytest.mark.parametrize("page", [APP, *PAGES], ids=PAGE_IDS)
def test_page_on_real_gpu_study(page, h200_workspace, monkeypatch) -> None:
    """The study brought back from the H200 opens on every page (artifacts stayed there)."""
    at = _run(page, h200_workspace, monkeypatch)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_results_shows_drift_on_the_gpu_study(h200_workspace, monkeypatch) -> None:
    """The H200 study re-measured its default route: drift and normalization are offered."""
    at = _run(APP.parent / "app_pages" / "4_Results.py", h200_workspace, monkeypatch)
    assert not at.exception, at.exception
    at.segmented_control(key="res_view").set_value("Measurement health").run()
    assert any(c.key == "res_normalize" for c in at.checkbox)
    assert any("drifted" in w.value for w in at.warning)


@pytest.mark.parametrize("which", ["finished", "h200"])
def test_results_every_view(which, finished_workspace, h200_workspace, monkeypatch) -> None:
    """Every Results view renders (scatter, speedup, history, knob effect, parallel coordinates,
    timeline, EDF, importance, table, health, notes) on a synthetic and on the real H200 study."""
    from gptuner_core.dashboard.results import TABS

    ws = finished_workspace if which == "finished" else h200_workspace
    at = _run(APP.parent / "app_pages" / "4_Results.py", ws, monkeypatch)
    for view in TABS:
        at.segmented_control(key="res_view").set_value(view).run()
        assert not at.exception, (view, at.exception)
        assert not at.error, (view, [e.value for e in at.error])
    assert len(at.get("plotly_chart")) + len(at.dataframe) + len(at.text_area) > 0
