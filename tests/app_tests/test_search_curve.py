"""The History view and the HTML report draw the search curve, with random search's band where
the space is recorded (issue 28 item 5): an imported Kernel Tuner space, a study tuned on it with
the replay backend, and a study whose space is not recorded."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from tests.app_tests.conftest import APP


@pytest.fixture(scope="module")
def curve_workspace(tmp_path_factory):
    from gptuner_core.cli import main
    from gptuner_core.testing import spaces

    ws = tmp_path_factory.mktemp("ws_curves")
    _, kt = spaces.write_spaces(ws.parent / f"{ws.name}-files")
    assert main(["import", str(kt), "--study", str(ws / "imported")]) == 0
    assert main(["tune", str(ws / "imported"), "--study", str(ws / "tuned"), "--backend", "replay",
                 "--expr", "-kt:a=[1|2|4|8] -kt:b=[16|32|64] -kt:c=[x|y]", "--search", "random",
                 "--max-candidates", "8", "--revalidate-top-k", "0", "--drift-every", "0", "--no-gate",
                 "--quiet"]) == 0
    return ws


def _page(ws, name, page, monkeypatch) -> AppTest:
    """``page`` (``app_pages/...``) of study ``name`` in workspace ``ws``, rendered without error."""
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.STUDY] = name
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def _history(ws, name, monkeypatch) -> AppTest:
    at = _page(ws, name, "app_pages/4_Results.py", monkeypatch)
    at.segmented_control(key="res_view").set_value("History").run()
    assert not at.exception, at.exception
    return at


def _curve_spec(at: AppTest) -> str:
    charts = [c for c in at.get("plotly_chart") if "best so far" in c.proto.spec and "Best so far against" in c.proto.spec]
    assert len(charts) == 1
    return charts[0].proto.spec


def test_history_draws_the_random_band_for_a_replayed_study(curve_workspace, monkeypatch):
    at = _history(curve_workspace, "tuned", monkeypatch)
    spec = _curve_spec(at)
    assert "random search, expected" in spec and "10th-90th percentile" in spec
    assert "% of the recorded optimum" in spec
    at.segmented_control(key="res_curve_x").set_value("build seconds").run()
    assert not at.exception, at.exception
    assert "build seconds" in _curve_spec(at)


def test_history_without_a_recorded_space_has_no_band(finished_workspace, monkeypatch):
    at = _history(finished_workspace, "digits-study", monkeypatch)
    spec = _curve_spec(at)
    assert "random search" not in spec and "best screening speed-up (x)" in spec
    assert any("Random search's expectation and band appear" in c.value for c in at.caption)


def test_the_report_draws_the_same_curve(curve_workspace, tmp_path):
    from gptuner_core.report import write_report

    for name in ("imported", "tuned"):
        page = write_report(curve_workspace / name, tmp_path / f"{name}.html").read_text()
        assert "data-key='search_curve_builds'" in page and "data-key='search_curve_seconds'" in page
        assert "random search, expected" in page
        assert "data-key='accuracy_latency'" not in page  # no losses stored: nothing to draw


@pytest.mark.parametrize("name", ["imported", "tuned"])
def test_a_space_without_accuracy_says_so_instead_of_drawing_it(curve_workspace, monkeypatch, name):
    """Seen on an imported convolution space: 'configured ε: None' above a scatter of every route
    at an accuracy loss of '0 drawn at 1e-12'. A Kernel Tuner space stores no losses."""
    at = _page(curve_workspace, name, "app_pages/4_Results.py", monkeypatch)
    texts = [c.value for c in at.caption] + [i.value for i in at.info]
    assert not any("None" in t for t in texts), texts
    assert any("no accuracy" in t.lower() for t in texts), texts
    assert not [c for c in at.get("plotly_chart") if "Accuracy vs latency" in c.proto.spec]


def test_explain_does_not_offer_to_profile_a_replayed_study(curve_workspace, monkeypatch):
    """The Explain page offered 'gptuner diff STUDY 0 N --capture' for a study replayed from an
    imported space; the command fails: a replayed candidate has no engine."""
    at = _page(curve_workspace, "tuned", "app_pages/7_Explain.py", monkeypatch)
    assert not [c for c in at.code if "--capture" in c.value]
    assert any("replayed from a recording" in t.value for t in [*at.info, *at.caption])
