"""Ray workers on a local cluster with two CPU "device" resources, on the recorded sweep.

Two workers give the same candidates and verdict as one worker; no route is proposed twice; a
worker killed with a candidate in flight has that candidate re-queued and completed (never
recorded as CRASHED); a coordinator killed with SIGKILL loses nothing on ``--continue``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from gptuner_core.routes import Route


ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'gptuner[ray]')")
pytestmark = pytest.mark.slow

from gptuner_core.config import StudyConfig  # noqa: E402
from gptuner_core.engine.loop.loop import Budget  # noqa: E402
from gptuner_core.engine.loop.simulate import _TraceSink  # noqa: E402
from gptuner_core.engine.loop.tuner import Tuner  # noqa: E402
from gptuner_core.engine.scale.parallel import run_parallel  # noqa: E402
from gptuner_core.engine.scale.ray_workers import RayPool  # noqa: E402
from gptuner_core.engine.scale.scale_out import ScaleOut  # noqa: E402
from gptuner_core.recording import load_recording  # noqa: E402
from gptuner_core.records import CandidateState  # noqa: E402
from gptuner_core.storage import open_store  # noqa: E402
from gptuner_core.strategies import get_strategy  # noqa: E402
from gptuner_core.testing.slow_replay import SlowRecordedEvaluator  # noqa: E402

from .conftest import REPO  # noqa: E402


SWEEP = REPO / "tests" / "data" / "recorded_sweep" / "sweep.json"


@pytest.fixture(scope="module")
def cluster():
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, resources={"gptuner_cpu_device": 2}, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}}, log_to_driver=False)
    yield
    ray.shutdown()


def _config(search="full"):
    rec = load_recording(SWEEP)
    return StudyConfig(model=str(SWEEP), backend="replay", expression=str(rec.expression),
                       search=search, seed=4, revalidate_top_k=2, revalidate_rounds=2,
                       drift_every=5)


def _study(path, monkeypatch, scale_out, search="full"):
    cfg = _config(search)
    if scale_out is not None:  # the study's own settings, as --ray/--workers give them
        cfg = cfg.replace(build_workers=scale_out.build_workers, ray=scale_out.ray,
                          workers=scale_out.workers, normalize=scale_out.normalize)
    summary = Tuner(cfg, path).run()
    with open_store(path, readonly=True) as store:
        return summary, store.candidates(), store.winner()


def test_two_workers_same_candidates_and_verdict(cluster, tmp_path, monkeypatch):
    db = load_recording(SWEEP).db
    one, recs1, win1 = _study(tmp_path / "one", monkeypatch, None)
    two, recs2, win2 = _study(tmp_path / "two", monkeypatch, ScaleOut(ray="auto", workers=2))
    drifts = []
    for name in ("one", "two"):
        with open_store(tmp_path / name, readonly=True) as store:
            drifts.append([e.payload["after_candidate"] for e in store.events("baseline")])
    assert drifts[0] and drifts[1] == drifts[0], "the drift sentinel ran at the same points, on a worker"
    assert two.status == one.status == "finished"
    keys = [Route.parse(r.requested_route).key(db) for r in recs2]
    assert len(keys) == len(set(keys)), "a route was proposed twice"
    assert {(r.requested_route, r.state) for r in recs2} == {(r.requested_route, r.state) for r in recs1}
    assert [r.number for r in recs2] == list(range(len(recs2)))
    assert win2.verdict == win1.verdict and win2.number is not None
    assert recs2[win2.number].requested_route == recs1[win1.number].requested_route
    workers = {r.extra["device"]["worker"] for r in recs2}
    assert workers == {0, 1}, "both workers ran candidates"
    assert all(r.extra["device"]["host"] and r.extra["device"]["fingerprint"] for r in recs2)


def test_real_onnxruntime_candidates_run_in_fresh_processes_on_workers(cluster, tmp_path, monkeypatch):
    """A real backend through the workers: each candidate is a fresh isolated process started by
    a worker (its own log), pinned to that worker's device, and the study finishes as usual."""
    import json

    from gptuner_core.cli import main

    from .conftest import QUICK

    study = tmp_path / "ort"
    args = ["tune", str(REPO / "assets/cnn_digits.onnx"), "--backend", "onnxruntime",
            "--dataset", str(REPO / "assets/cnn_digits_eval.npz"), "--search", "full",
            "--expr", "-ort:enable_mem_pattern=[on|off]",
            "--batch-size", "8", "--metric", "cos", "--epsilon", "0.01", "--revalidate-top-k", "0",
            "--drift-every", "0", "--study", str(study), "--quiet", "--ray", "auto", "--workers", "2",
            ] + [f"--measure-option={k}={json.dumps(v)}" for k, v in QUICK.items()]
    assert main(args) == 0
    with open_store(study, readonly=True) as store:
        recs = store.candidates()
    assert len(recs) == 2 and all(r.state is CandidateState.COMPLETE for r in recs)
    pids = {r.extra["device"]["worker"]: r.extra["device"] for r in recs}
    assert set(pids) == {0, 1}
    for r in recs:
        assert (study / "candidates" / f"{r.number:05d}" / "log.txt").exists()
        assert r.latency is not None and r.speedup is not None


def test_tpe_with_two_workers_never_duplicates(cluster, tmp_path, monkeypatch):
    db = load_recording(SWEEP).db
    _, recs, _ = _study(tmp_path / "tpe", monkeypatch, ScaleOut(ray="auto", workers=2), "fast_tpe")
    keys = [Route.parse(r.requested_route).key(db) for r in recs]
    assert len(keys) == len(set(keys)) >= 5


def test_killed_worker_candidate_requeued_and_completed(cluster):
    recording = load_recording(SWEEP)
    evaluator = SlowRecordedEvaluator(recording, delay_s=0.4)
    pool = RayPool(ScaleOut(ray="auto", workers=2), evaluator)
    submitted: list[int] = []
    submit = pool.submit

    def counting(proposal, number, *args):
        submitted.append(number)
        return submit(proposal, number, *args)

    pool.submit = counting  # type: ignore[method-assign]
    victim = pool.devices[0]["pid"]

    def kill_when_busy():
        deadline = time.monotonic() + 30
        while len(submitted) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)  # both workers hold a candidate now
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    strategy = get_strategy("full", recording.expression, seed=0, db=recording.db)
    states: list[list[dict]] = []

    class Sink(_TraceSink):
        def workers(self, now):  # the Live page's worker table
            states.append(now)

    sink = Sink(recording, evaluator)
    history: list = []
    end = run_parallel(
        strategy=strategy, evaluator=evaluator, pool=pool, history=history,
        key=lambda t: Route.parse(t).key(recording.db), budget=Budget(max_candidates=10),
        sink=sink, space_size=recording.expression.count("full"), search="full",
    )
    killer.join()
    assert end.status == "finished"
    again = [n for n in set(submitted) if submitted.count(n) > 1]
    assert again, f"no candidate was re-queued: {submitted}"
    assert [r.number for r in history] == list(range(10))
    assert not [r for r in history if r.state is CandidateState.CRASHED]
    assert any([w["state"] for w in now] == ["busy", "busy"] for now in states)
    assert all(w["uuid"] and w["fingerprint"] for now in states for w in now)
    expected = {r.requested_route: r.state for r in recording.records}
    assert all(expected.get(r.requested_route, r.state) is r.state for r in history)


SCRIPT = """
import functools, sys
from gptuner_core.engine.evaluate import recorded
from gptuner_core.engine.loop import tuner
from gptuner_core.testing.slow_replay import SlowRecordedEvaluator
recorded.RecordedEvaluator = SlowRecordedEvaluator
from gptuner_core.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_coordinator_sigkill_then_continue_loses_nothing(cluster, tmp_path):
    study = tmp_path / "study"
    script = tmp_path / "coordinator.py"
    script.write_text(SCRIPT, encoding="utf-8")
    rec = load_recording(SWEEP)
    env = {**os.environ, "PYTHONPATH": str(REPO), "GPTUNER_TEST_REPLAY_DELAY_S": "0.2",
           "RAY_AUTH_MODE": "disabled"}
    env["RAY_ADDRESS"] = ray.get_runtime_context().gcs_address  # --ray auto joins the cluster
    args = [sys.executable, str(script), "tune", str(SWEEP), "--backend", "replay",
            "--expr", str(rec.expression), "--search", "full", "--revalidate-top-k", "1",
            "--revalidate-rounds", "2", "--drift-every", "0", "--study", str(study), "--quiet",
            "--ray", "auto", "--workers", "2"]
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def finished():
        try:
            with open_store(study, readonly=True) as store:
                return [r for r in store.candidates() if r.state.is_finished()]
        except Exception:  # noqa: BLE001 - not created yet
            return []

    deadline = time.monotonic() + 60
    while len(finished()) < 4 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with open_store(study, readonly=True) as store:
        before = {r.number: r for r in store.candidates() if r.state.is_finished()}
    assert len(before) >= 4
    assert sorted(before) == list(range(len(before))), "committed in proposal order"
    done = subprocess.run([*args[:2], "tune", "--continue", "--study", str(study), "--quiet"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with open_store(study, readonly=True) as store:
        after = {r.number: r for r in store.candidates()}
    for n, r in before.items():  # nothing committed is lost or changed
        assert after[n].requested_route == r.requested_route and after[n].state is r.state
    assert len(after) == rec.expression.count("full")
    keys = [Route.parse(r.requested_route).key(rec.db) for r in after.values()]
    assert len(keys) == len(set(keys))
