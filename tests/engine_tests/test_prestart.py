"""A study starts its candidates' launcher before its own set-up, and a torch fork server
imports the model module then, before any candidate asks to be forked."""

from __future__ import annotations

import pytest

from gptuner_core.cli import main
from gptuner_core.engine.process import launcher

from .test_fork_server import MODEL
from .test_fork_server import _faulty_tune


@pytest.mark.slow
def test_prestart_has_the_server_import_the_model_before_any_fork(tmp_path, fresh_launcher):
    """A study's prestart (before its own set-up) has the torch fork server import the model
    module right away, not when the first candidate asks to be forked."""
    import time

    from gptuner_core.engine.process.start_method import prestart

    marker = tmp_path / "imported"
    model = tmp_path / "marked_model.py"
    model.write_text(MODEL.read_text()
                     + f"\nimport os\nopen({str(marker)!r}, 'a').write(str(os.getpid()) + '\\n')\n")
    prestart({"backend": "torch", "backend_options": {"device": "cpu"}, "model": f"{model}:factory"},
             "launcher")
    deadline = time.monotonic() + 300
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), "the fork server did not import the model"
    server = launcher.shared("torch")
    assert marker.read_text().split() == [str(server.pid)]  # imported there, nothing forked yet


def test_a_study_starts_the_launcher_before_its_own_set_up(tmp_path, monkeypatch):
    from gptuner_core.engine.loop import tuner
    from gptuner_core.engine.process import start_method

    order: list[str] = []
    monkeypatch.setattr(start_method, "prestart", lambda job, *a: order.append(f"prestart {job['backend']}"))
    monkeypatch.setattr(tuner.Tuner, "_describe", lambda self: order.append("describe") or (_ for _ in ()).throw(
        KeyboardInterrupt()))
    args = _faulty_tune(tmp_path / "s", monkeypatch, "off", "-fault:label=[a|b]", 1)
    assert main(args) != 0  # interrupted in its set-up
    assert order == ["prestart gptuner_core.testing.faulty_backend:FaultyBackend", "describe"]


def test_a_replay_starts_no_launcher(tmp_path, monkeypatch):
    """A replayed study builds nothing: no launcher is started for it."""
    from gptuner_core.engine.process import start_method
    from gptuner_core.testing import spaces

    started: list[str] = []
    monkeypatch.setattr(start_method, "prestart", lambda job, *a: started.append(job["backend"]))
    study = tmp_path / "imported"
    assert main(["import", str(spaces.write_spaces(tmp_path / "spaces")[1]), "--study", str(study)]) == 0
    assert main(["tune", str(study), "--study", str(tmp_path / "tuned"), "--backend", "replay",
                 "--expr", "-kt:a=[1|2|4|8] -kt:b=[16|32|64] -kt:c=[x|y]", "--search", "random",
                 "--max-candidates", "4", "--revalidate-top-k", "0", "--no-gate", "--quiet"]) == 0
    assert started == []
