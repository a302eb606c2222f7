"""Compare's "is B faster than A?" button on a real tiny study (real ONNX model through the faulty
backend, fresh processes, real SQLite, a real device lock): launch in the background, "waiting
for device" while another holder measures, the stored result (the record the CLI prints),
the result again on re-opening the page, and a failed launch's cause."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from gptuner_core.dashboard import state
from gptuner_core.device_lock import DeviceLock
from gptuner_core.device_lock import measuring_devices
from gptuner_core.storage import open_store
from tests.app_tests.conftest import APP
from tests.engine_tests.conftest import FAULTY
from tests.engine_tests.conftest import QUICK
from tests.engine_tests.conftest import make_tiny_model


pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real finished study: #0 the default, #1 the same route 40 ms slower per call."""
    import numpy as np

    from gptuner_core.cli import main

    root = tmp_path_factory.mktemp("cmp")
    model = make_tiny_model(root / "tiny.onnx")
    data = root / "tiny.npz"
    np.savez(data, x=np.random.default_rng(1).normal(size=(32, 16)).astype(np.float32))
    ws = root / "ws"
    with pytest.MonkeyPatch.context() as mp:  # other agents' studies never hold this lock dir
        mp.setenv("GPTUNER_LOCK_DIR", str(root / "locks"))
        rc = main(["tune", str(model), "--backend", FAULTY, "--expr", "-fault:call_ms=[0|40]",
                     "--dataset", str(data), "--batch-size", "4", "--epsilon", "1e-4", "--revalidate-top-k", "0",
                     "--drift-every", "0", "--study", str(ws / "tiny"), "--quiet", "--profile-runs", "0",
                     *[f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]])
    assert rc == 0
    return ws


def _compare(ws: Path, monkeypatch, locks: Path) -> AppTest:
    monkeypatch.setenv("GPTUNER_WORKSPACE", str(ws))
    monkeypatch.setenv("GPTUNER_LOCK_DIR", str(locks))
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.session_state[state.STUDY] = "tiny"
    at.session_state[state.COMPARE] = [0, 1]
    at.run()
    at.switch_page("app_pages/6_Compare.py").run()
    assert not at.exception, at.exception
    return at


def _texts(at: AppTest) -> str:
    return " ".join(e.value for kind in (at.info, at.success, at.error, at.warning, at.caption,
                                         at.markdown) for e in kind)


def test_button_waits_for_the_device_then_stores_the_result(workspace, monkeypatch, tmp_path):
    locks = tmp_path / "locks"
    at = _compare(workspace, monkeypatch, locks)
    assert "has not been re-validated against #0 yet" in _texts(at)
    assert "Screening (one window each, not a verdict): #1 vs #0" in _texts(at)
    at.selectbox(key="cmp_rounds").set_value(4).run()
    other = DeviceLock(measuring_devices("cpu"), study="another-study")
    assert other.acquire(timeout=5)
    try:
        at.run()
        assert "The measuring device is busy: study another-study" in _texts(at)  # warned first
        at.button(key="cmp_reval").click().run()
        assert not at.exception, at.exception
        deadline = time.monotonic() + 60
        while "waiting for device" not in " ".join(p.proto.text for p in at.get("progress")):
            assert time.monotonic() < deadline, _texts(at)
            time.sleep(0.5)
            at.run()
        assert at.button(key="cmp_reval").disabled  # one comparison of the pair at a time
    finally:
        other.release()
    deadline = time.monotonic() + 120
    while not at.success and not at.info or "has not been" in _texts(at) or at.get("progress"):
        assert time.monotonic() < deadline, _texts(at)
        assert not at.error, _texts(at)
        time.sleep(1.0)
        at.run()
    with open_store(workspace / "tiny", readonly=True) as store:
        (event,) = store.events("pairwise")
    from gptuner_core.records.pairwise import Comparison

    stored = Comparison.from_json(event.payload)
    assert stored.verdict == "not_faster" and stored.rounds == 4  # 40 ms per call is slower
    assert f"**{stored.headline()}** — {stored.sentence()}" in _texts(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Speed-up of #1 vs #0"] == f"{stored.speedup:.3f}x"
    assert metrics["Rounds"] == "4/4"

    again = _compare(workspace, monkeypatch, locks)  # re-opening the page shows it
    assert stored.headline() in _texts(again)
    assert not again.get("progress")


def test_a_failed_launch_shows_its_cause(workspace, monkeypatch, tmp_path):
    """A candidate whose artifact is gone cannot be compared: one line on the page, no run."""
    study = workspace / "tiny"
    with open_store(study) as store:
        rec = store.candidate(1)
        # inside the study (a path outside is refused as such, issue 24), and gone
        store.put_candidate(rec.replace(number=2, artifact_path=str(study / "gone")))
    at = _compare(workspace, monkeypatch, tmp_path / "locks")
    at.multiselect(key="cmp_pick_tiny").set_value([0, 2]).run()
    at.button(key="cmp_reval").click().run()
    assert not at.exception, at.exception
    errors = " ".join(e.value for e in at.error)
    assert "Could not start the comparison: candidate #2 has no measurable artifact" in errors
    assert not any(p.name.startswith("00000_00002") for p in (study / "pairwise").glob("*"))


def test_a_run_that_fails_shows_its_cause(workspace, monkeypatch, tmp_path):
    """The comparison starts but its reference cannot be measured (its artifact file is
    garbage): the page says so with the run's own cause instead of waiting for ever."""
    ws = tmp_path / "ws"
    shutil.copytree(workspace / "tiny", ws / "tiny")
    garbage = ws / "tiny" / "garbage.bin"
    garbage.write_bytes(b"not an artifact")
    with open_store(ws / "tiny") as store:
        store.put_candidate(store.candidate(1).replace(number=3, artifact_path=str(garbage)))
    at = _compare(ws, monkeypatch, tmp_path / "locks")
    at.multiselect(key="cmp_pick_tiny").set_value([3, 0]).run()
    at.selectbox(key="cmp_a_tiny").set_value(3).run()
    at.selectbox(key="cmp_rounds").set_value(4).run()
    at.button(key="cmp_reval").click().run()
    deadline = time.monotonic() + 60
    while not at.error:
        assert time.monotonic() < deadline, _texts(at)
        time.sleep(0.5)
        at.run()
    errors = " ".join(e.value for e in at.error)
    assert "**The last comparison failed:** re-measurement of candidate #3 failed" in errors, errors
    assert not at.button(key="cmp_reval").disabled  # it can be started again
