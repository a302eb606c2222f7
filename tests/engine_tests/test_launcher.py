"""The pre-imported launcher: fresh forked children, the caller's context, the death chain."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from gptuner_core.engine.process import launcher
from gptuner_core.engine.process.isolation import run_isolated
from gptuner_core.engine.process.isolation import start_method_for
from gptuner_core.engine.process.launcher_main import blas_threads
from gptuner_core.errors import ConfigError

from .conftest import wait_for


REPORT = "gptuner_core.testing.child_targets:report"
HANG = "gptuner_core.testing.child_targets:hang_with_pids"
HANG_FIRST = "gptuner_core.testing.child_targets:hang_first_with_pids"
TIMEOUTS = {"build": 60.0, "measure": 60.0}


def _report(tmp_path: Path, name: str, method: str = "launcher", **job) -> dict:
    out = run_isolated(REPORT, job, tmp_path / name, timeouts=TIMEOUTS, start_method=method)
    assert out.status == "ok", out.error
    return out.result


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie waiting for a reaper that is not us."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _holding(path: Path) -> list[int]:
    """Live processes with ``path`` open (a candidate and anything it started keep its log open)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        if str(path) in links and not _gone(int(pid)):
            pids.append(int(pid))
    return pids


class TestFreshChildren:
    def test_children_are_forked_by_the_launcher_and_share_no_state(self, tmp_path):
        first = _report(tmp_path, "a")
        second = _report(tmp_path, "b")
        assert first["ppid"] == second["ppid"] != os.getpid()  # both forked by one launcher
        assert first["pid"] != second["pid"]
        # each child changed a module of its own and a preloaded one: the next saw neither
        assert (second["state"], second["preloaded_state"]) == ("initial", "initial")

    def test_the_callers_env_cwd_and_sys_path_reach_the_child(self, tmp_path, monkeypatch):
        # how tests reach a worktree's gptuner_core; set here so it holds from a plain checkout too
        monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH") or str(tmp_path / "extra"))
        plugins = tmp_path / "plugins"
        plugins.mkdir()
        (plugins / "launcher_probe_plugin.py").write_text("VALUE = 42\n")
        monkeypatch.syspath_prepend(str(plugins))
        before = _report(tmp_path, "before")["ppid"]  # a launcher started with this sys.path
        monkeypatch.setenv("GPTUNER_PROBE", "set after the launcher started")
        monkeypatch.chdir(tmp_path)
        keys = ["GPTUNER_PROBE", "PYTHONPATH", "OPENBLAS_NUM_THREADS"]
        job = {"env_keys": keys, "import": "launcher_probe_plugin"}
        forked = _report(tmp_path, "forked", **job)
        spawned = _report(tmp_path, "spawned", "spawn", **job)
        assert forked["ppid"] == before != os.getpid() and spawned["ppid"] == os.getpid()
        expected = {k: os.environ.get(k) for k in keys}
        assert expected["PYTHONPATH"]
        assert forked["env"] == spawned["env"] == expected  # the launcher's own BLAS setting is gone
        assert forked["cwd"] == spawned["cwd"] == str(tmp_path)
        assert forked["sys_path"] == sys.path
        assert forked["imported"] == spawned["imported"] == 42

    @pytest.mark.parametrize("env", [{}, {"OMP_NUM_THREADS": "1"}, {"OPENBLAS_NUM_THREADS": "2"}])
    def test_openblas_pool_is_the_one_a_spawned_child_gets(self, tmp_path, monkeypatch, env):
        if not blas_threads():
            pytest.skip("numpy does not use OpenBLAS here")
        for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        forked = _report(tmp_path, "forked")
        spawned = _report(tmp_path, "spawned", "spawn")
        assert forked["blas_threads"] == spawned["blas_threads"]
        assert forked["threads"] == spawned["threads"]


class TestLauncherSafety:
    def test_launcher_is_single_threaded_and_free_of_cuda(self, tmp_path):
        _report(tmp_path, "warm")
        pid = launcher.shared().pid
        assert len(os.listdir(f"/proc/{pid}/task")) == 1
        maps = Path(f"/proc/{pid}/maps").read_text()
        for lib in ("libcuda", "libcudart", "libnvinfer", "libtorch", "onnxruntime"):
            assert lib not in maps

    @pytest.mark.parametrize("probe,reason", [
        ("import threading, time\nthreading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n",
         "threads"),
        ("import sys, types\nsys.modules['torch'] = types.ModuleType('torch')\n", "imported torch"),
    ])
    def test_unsafe_launcher_refuses_and_the_child_is_spawned(
        self, tmp_path, monkeypatch, fresh_launcher, caplog, probe, reason,
    ):
        (tmp_path / "launcher_probe_unsafe.py").write_text(probe)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setattr(launcher, "PRELOAD", (*launcher.PRELOAD, "launcher_probe_unsafe"))
        with pytest.raises(launcher.LauncherUnavailable, match=reason):
            launcher.shared().launch(REPORT, [])
        seen = _report(tmp_path, "fallback")
        assert seen["ppid"] == os.getpid()
        assert reason in caplog.text

    def test_dead_launcher_is_restarted(self, tmp_path, fresh_launcher):
        old = _report(tmp_path, "before")["ppid"]
        os.kill(old, signal.SIGKILL)
        assert wait_for(lambda: _gone(old))
        new = _report(tmp_path, "after")["ppid"]
        assert new not in (old, os.getpid())
        assert new == launcher.shared().pid

    @pytest.mark.parametrize("phase", ["build", "measure"])
    def test_launcher_dying_mid_candidate_kills_the_child_and_runs_it_again(self, tmp_path, fresh_launcher,
                                                                           phase):
        """Defect (issue 43 item 2): a killed launcher marked the candidate in flight CRASHED for
        good; the fork server is infrastructure, not the route: the candidate runs again."""
        pid_file = tmp_path / "pids"
        outcome = []
        worker = threading.Thread(target=lambda: outcome.append(run_isolated(
            HANG_FIRST, {"pid_file": str(pid_file), "phase": phase}, tmp_path / "hang", timeouts=TIMEOUTS,
            start_method="launcher",
        )))
        worker.start()
        assert wait_for(pid_file.exists)
        child, parent, _ = map(int, pid_file.read_text().split())
        os.kill(parent, signal.SIGKILL)
        worker.join(60)
        assert outcome, "run_isolated did not return"
        assert (outcome[0].status, outcome[0].result["attempt"], outcome[0].attempts) == ("ok", 2, 2), outcome
        assert wait_for(lambda: _gone(child), 10)
        assert "the launcher process died" in (tmp_path / "hang" / "log.txt").read_text()


class TestPolicy:
    def test_cuda_capable_backends_get_a_spawned_interpreter(self, monkeypatch):
        monkeypatch.delenv("GPTUNER_START_METHOD", raising=False)
        assert start_method_for({"backend": "onnxruntime"}) == "launcher"
        assert start_method_for({"backend": "gptuner_core.testing.faulty_backend:FaultyBackend"}) == "launcher"
        assert start_method_for({"backend": "torch", "backend_options": {"device": "cpu"}}) == "launcher"
        # torch on a GPU: forked from the torch launcher (the fork server that never initialises CUDA)
        assert start_method_for({"backend": "torch", "backend_options": {"device": "cuda:0"}}) == "launcher"
        for job in ({"backend": "tensorrt"}, {"backend": "trtexec"}, {"backend": "my.plugin:Backend"}, {}):
            assert start_method_for(job) == "spawn", job
        assert start_method_for({"backend": "tensorrt"}, "launcher") == "launcher"
        monkeypatch.setenv("GPTUNER_START_METHOD", "spawn")
        assert start_method_for({"backend": "onnxruntime"}) == "spawn"
        monkeypatch.setenv("GPTUNER_START_METHOD", "fork")
        with pytest.raises(ConfigError, match="GPTUNER_START_METHOD must be one of auto, launcher, spawn .got 'fork'."):
            start_method_for({"backend": "onnxruntime"})

    def test_a_tensorrt_job_runs_in_a_spawned_child(self, tmp_path, monkeypatch):
        monkeypatch.delenv("GPTUNER_START_METHOD", raising=False)
        out = run_isolated(REPORT, {"backend": "tensorrt"}, tmp_path / "trt", timeouts=TIMEOUTS)
        assert out.status == "ok" and out.result["ppid"] == os.getpid()


TUNER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from gptuner_core.engine.process.isolation import run_isolated
    work = Path(sys.argv[1])
    run_isolated({target!r}, {{"pid_file": str(work / "pids")}}, work / "child",
                 timeouts={{"build": 600, "measure": 600}}, start_method=sys.argv[2])
""").format(target=HANG)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["launcher", "spawn"])
def test_sigkilled_tuner_leaves_no_process_behind(tmp_path, method):
    """tuner SIGKILLed -> launcher exits -> its child is killed (spawn: the child directly)."""
    tuner = subprocess.Popen([sys.executable, "-c", TUNER, str(tmp_path), method])
    try:
        assert wait_for((tmp_path / "pids").exists, 120), "the candidate never started"
        child, parent = map(int, (tmp_path / "pids").read_text().split())
        assert parent == tuner.pid if method == "spawn" else parent != tuner.pid
        tuner.kill()
        tuner.wait()
        assert wait_for(lambda: _gone(child) and _gone(parent), 10), "an orphan survived the tuner"
        assert not _holding(tmp_path / "child" / "log.txt"), "a process still writes the log"
    finally:
        tuner.kill()
        tuner.wait()


def test_prestart_readies_the_launcher_the_first_candidate_then_uses(tmp_path, fresh_launcher):
    from gptuner_core.engine.process.isolation import prestart

    prestart({"backend": "onnxruntime"}, "auto")
    assert wait_for(lambda: launcher._shared is not None, 120)  # noqa: SLF001
    started = launcher.shared().pid
    assert _report(tmp_path, "first")["ppid"] == started


def test_a_closed_launcher_leaves_without_the_interpreter_teardown(tmp_path, monkeypatch):
    """Once closed, the launcher kills its children and exits at once (``os._exit``), not through
    the interpreter's teardown: with torch imported that teardown took about 1 s, which a
    finishing study waited for in ``close``. A preloaded module's exit handler shows which."""
    marker = tmp_path / "teardown_ran"
    (tmp_path / "probe_at_exit.py").write_text(
        f"import atexit, pathlib\natexit.register(pathlib.Path({str(marker)!r}).write_text, 'ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    server = launcher.Launcher(preload=("probe_at_exit",), kind="cpu")
    assert server.alive()
    server.close()
    assert server.proc.returncode == 0
    assert not marker.exists()
