"""A study folder from someone else on the pages (issue 24): Compare and Explain read no profile
linked out of the folder, Compare's re-validation asks before running the study's code, and
Resume writes nowhere the folder says outside the workspace."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from gptuner_core.profiles import LayerProfile
from gptuner_core.profiles import LayerTime
from gptuner_core.profiles import profile_path
from gptuner_core.storage import open_store
from gptuner_core.testing.synthetic_study import write_synthetic_study
from tests.app_tests.conftest import APP
from tests.app_tests.test_trust_pages import _foreign_study


def _everything(at: AppTest) -> str:
    """Every element's content on the page (text, tables, chart specs)."""
    out: list[str] = []

    def walk(node: object) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)  # noqa: SLF001 - the whole element tree
    return " ".join(out)


def _page(ws: Path, monkeypatch, page: str, **session: object) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    at = AppTest.from_file(str(APP), default_timeout=60)
    for key, value in session.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_compare_and_explain_do_not_follow_a_profile_linked_out(tmp_path: Path, monkeypatch) -> None:
    """Defect: Compare and Explain showed the layers of a profile.json symlinked out of the folder."""
    ws = tmp_path / "ws"
    study = write_synthetic_study(ws / "copied", 6, seed=3)
    outside = LayerProfile(backend="onnxruntime", source="x", runs=1, layers=(
        LayerTime(name="SECRET_LAYER", kind="Gemm", time_ms=1.0, run_ms=(1.0,), origins=("SECRET_LAYER",)),))
    target = outside.save(tmp_path / "elsewhere.json")
    for n in range(6):
        profile_path(study, n).parent.mkdir(parents=True, exist_ok=True)
        profile_path(study, n).unlink(missing_ok=True)
        profile_path(study, n).symlink_to(target)
    for page, extra in (("app_pages/7_Explain.py", {state.CANDIDATE: 1}), ("app_pages/6_Compare.py", {state.COMPARE: [0, 1]})):
        at = _page(ws, monkeypatch, page, **{state.STUDY: "copied", **extra})
        assert "SECRET_LAYER" not in _everything(at), page


def test_compare_asks_before_running_the_study_code(tmp_path: Path, monkeypatch) -> None:
    """Defect: Compare's re-validation started the study's routes (and code) with no question."""
    ws, _, marker = _foreign_study(tmp_path)
    at = _page(ws, monkeypatch, "app_pages/6_Compare.py", **{state.STUDY: "copied", state.COMPARE: [0, 1]})
    at.button(key="cmp_reval").click().run()
    assert not at.exception, at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "evil.py:metric" in warnings and "imported and run" in warnings
    assert any(b.key == "cmp_reval_confirm" for b in at.button)
    assert not (ws / "copied" / "pairwise").exists() and not marker.exists()


def test_resume_never_writes_to_a_stored_output_outside_the_workspace(tmp_path: Path, monkeypatch) -> None:
    """Defect: dashboard Resume wrote through a stored output / cache_dir outside the workspace."""
    ws = tmp_path / "ws"
    study = write_synthetic_study(ws / "copied", 6, seed=3, status="stopped")
    foreign = tmp_path / "foreign"
    with open_store(study, readonly=True) as store:
        cfg = {**store.config(), "output": str(foreign / "model.onnx")}
    with sqlite3.connect(study / "study.sqlite") as conn:
        conn.execute("UPDATE study SET config = ? WHERE id = 1", (json.dumps(cfg),))
    at = _page(ws, monkeypatch, "app_pages/3_Live.py", **{state.STUDY: "copied"})
    at.button(key="live_resume").click().run()
    assert not at.exception, at.exception
    assert any("outside the workspace" in e.value for e in at.error), [e.value for e in at.error]
    assert not (study / "tuner.pid").exists() and not foreign.exists()


def test_pages_show_no_file_linked_out_of_the_folder(tmp_path: Path, monkeypatch) -> None:
    """The tuner log (Live, Overview) and the notes sidecar (Results) are read only from inside
    the study folder: a symlink out of it shows nothing of its target."""
    ws = tmp_path / "ws"
    study = write_synthetic_study(ws / "copied", 6, seed=3, status="stopped")
    secret = tmp_path / "secret.txt"
    secret.write_text('{"study": "TOP-SECRET-TOKEN", "notes": {"1": "TOP-SECRET-TOKEN"}}\nTOP-SECRET-TOKEN\n')
    (study / "tuner.log").symlink_to(secret)
    (study / "notes.json").symlink_to(secret)
    for page in ("app_pages/3_Live.py", "app_pages/4_Results.py", "app_pages/0_Overview.py"):
        at = _page(ws, monkeypatch, page, **{state.STUDY: "copied"})
        assert "TOP-SECRET-TOKEN" not in _everything(at), page
