"""Kill harness: SIGKILL real ``gptuner tune`` studies at random instants, resume, and check.

Each study is a real ``python -m gptuner_core tune`` subprocess (ONNX Runtime, the bundled MLP, spawn
children, SQLite), killed (SIGKILL to the tuner) when an *aim* fires: ``creation`` (just after
``study.sqlite`` appears), ``early``/``random`` (a random instant after the launch), ``candidate``/
``drift``/``revalidation`` (a random instant after a new entry in ``candidates/``, ``baselines/`` or
``revalidation/``, or a ``progress`` phase naming it), ``config`` (within 5 ms of the study folder
appearing: ``study.json`` and the inputs being written), ``output``/``bundle`` (while the
``--output`` artifact or its ``.bundle`` is being written), then resumed (``tune --continue`` when the
folder holds an initialised study, a fresh ``tune`` otherwise, the other if the first refuses)
until it finishes. Fork-server aims ride along a launch while the tuner lives on (issue 43):
``launcher`` (SIGKILL its launcher process), ``default_child`` (the process of candidate #0 while it
runs), ``child`` (any candidate's, drift's or re-validation's process); that launch must still
finish its work (the process runs again: the machinery's death is not the route's crash).
Checked after every kill and study, against an uninterrupted control study:
lost (a candidate committed as finished is missing or changed later), dup (a number or route
twice), unusable (a folder neither ``--continue`` nor ``tune`` accepts), orphans (a process with
the harness's marker in its environment, or naming the folder, alive ``--grace`` s after a kill),
stale (``gptuner show`` says "running" with no tuner alive), drift (a control baseline never
redone), reval (no re-validation/winner), infra (a candidate the control completed recorded
CRASHED or TIMED_OUT), output (finished without the ``--output`` artifact and a
bundle that verifies, or a partial one left), finished (status ``finished`` with every candidate).
After each finished study, ``gptuner export STUDY --trtexec-cache F`` is killed too (``export``):
``F`` must then be absent or whole, and the same command run again must write it.
Talks only to the CLI and ``gptuner_core.storage``, never to the engine.

Usage: .venv/bin/python benchmarks/kill_harness.py [--kills 50] [--seed 0] [--keep] [--report F]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _kill_observe import environment  # noqa: E402
from _kill_observe import folder_state  # noqa: E402
from _kill_observe import fork_server_target  # noqa: E402
from _kill_observe import our_processes  # noqa: E402
from _kill_observe import read_study  # noqa: E402
from _kill_observe import show_status  # noqa: E402
from _kill_observe import tail  # noqa: E402
from _kill_observe import wait_orphans  # noqa: E402

from gptuner_core.storage import STORE_FILENAME  # noqa: E402
from gptuner_core.storage import open_store  # noqa: E402


EXPR = "-ort:graph_optimization_level=[all|basic|extended] -ort:intra_op_num_threads=[0|1]"
MEASURE = {"warmup_s": 0.01, "warmup_calls": 2, "min_samples": 10, "max_samples": 60, "max_time_s": 0.5}
#: aim -> (folder whose new entries arm it, progress phase word, (low, high) delay after arming)
AIMS = {
    "creation": (None, None, (0.0, 0.5)), "early": (None, None, (0.0, 3.0)), "random": (None, None, (0.0, 12.0)),
    "candidate": ("candidates", None, (0.0, 1.0)), "drift": ("baselines", "drift", (0.0, 0.8)),
    "revalidation": ("revalidation", "revalid", (0.0, 2.5)),
    "config": (None, None, (0.0, 0.005)), "output": (None, None, (0.0, 0.05)), "bundle": (None, None, (0.0, 0.4)),
}
#: fork-server aims (the tuner lives on): the process killed -> (low, high) delay after it appears
FORK_AIMS = {"launcher": (0.0, 3.0), "default_child": (0.0, 0.4), "child": (0.0, 0.4)}
#: aims armed by a file appearing (polled every 2 ms): glob patterns under the study's parent
FILE_AIMS = {"output": ".{out}.tmp-*", "bundle": ".{out}.bundle.partial-*"}
COLUMNS = ("kills", "before", "after", "lost", "dup", "unusable", "orphans", "stale", "drift", "reval", "output",
           "infra", "finished")
FAULTS = COLUMNS[3:12]


@dataclass(kw_only=True)
class Study:
    name: str
    dir: Path
    kills: list[dict[str, Any]] = field(default_factory=list)
    committed: dict[int, dict[str, Any]] = field(default_factory=dict)  # number -> record as first seen
    problems: list[str] = field(default_factory=list)
    faults: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FAULTS, 0))
    finished: bool = False
    final_count: int = 0

    def fail(self, column: str, count: int, message: str | None) -> None:
        self.faults[column] += count
        if message:
            self.problems.append(message)


# -- processes ---------------------------------------------------------------------------------
def output_of(study: Path) -> Path:
    """Where a study's ``--output`` artifact goes (its bundle: the same name + ``.bundle``)."""
    return study.parent / f"{study.name}.out"


def writing(aim: str, study: Path) -> bool:
    """The tuner is writing the ``--output`` artifact (``output``) or its bundle (``bundle``): a
    temporary sibling exists, or the destination itself without what is written last (a writer
    that writes in place)."""
    out = output_of(study)
    if any(study.parent.glob(FILE_AIMS[aim].format(out=out.name))):
        return True
    if aim == "output":
        return out.exists() and not out.with_name(out.name + ".json").exists()
    bundle = out.with_name(out.name + ".bundle")
    return bundle.is_dir() and not (bundle / "manifest.json").exists()


def tune_argv(study: Path, *, resume: bool, expr: str) -> list[str]:
    argv = [sys.executable, "-m", "gptuner_core", "tune", "--study", str(study), "--quiet",
            "--output", str(output_of(study))]  # given again on --continue: outputs go where said now
    if resume:
        return [*argv, "--continue"]
    argv += [str(ROOT / "assets/mlp_digits.onnx"), "--dataset", str(ROOT / "assets/mlp_digits_eval.npz"),
             "--backend", "onnxruntime", "--search", "full", "--expr", expr, "--metric", "cos",
             "--epsilon", "0.01", "--drift-every", "2",
             "--revalidate-top-k", "2", "--revalidate-rounds", "2"]
    for key, value in MEASURE.items():
        argv += ["--measure-option", f"{key}={value}"]
    return argv


def observed_phase(study: Path, since: float, resume: bool) -> str:
    """What the tuner was doing: the newest entry since the launch under the phase folders."""
    if not (study / STORE_FILENAME).exists():
        return "before-creation"
    for aim in FILE_AIMS:  # writing --output (the artifact, then its bundle)
        if writing(aim, study):
            return aim
    best = (since, "resume" if resume else "creation")
    for sub, phase in (("candidates", "candidate"), ("baselines", "drift"), ("revalidation", "revalidation")):
        with contextlib.suppress(OSError):
            for entry in os.scandir(study / sub):
                best = max(best, (entry.stat().st_mtime, phase))
    return best[1]


# -- one launch --------------------------------------------------------------------------------
def armed(aim: str, study: Path, since: float, state: dict[str, Any]) -> bool:
    folder, word, _ = AIMS[aim]
    if aim == "creation":
        return (study / STORE_FILENAME).exists()
    if aim == "config":
        return study.exists()
    if aim in FILE_AIMS:
        return writing(aim, study)
    if folder is None:
        return True
    with contextlib.suppress(OSError):
        if any(e.stat().st_mtime >= since for e in os.scandir(study / folder)):
            return True
    if word and time.monotonic() - state.get("read", 0.0) > 0.25:  # a progress phase naming it
        state["read"] = time.monotonic()
        try:
            with open_store(study, readonly=True) as store:
                state["phase"] = str((store.get_meta("progress") or {}).get("phase", ""))
        except Exception:  # noqa: BLE001 - not readable yet
            state["phase"] = ""
    return bool(word and word in state.get("phase", ""))


def fork_kill(study: Path, tuner: int, fork: dict[str, Any], rng: random.Random, since: float,
              resume: bool) -> dict[str, Any] | None:
    """Kill the fork-server process ``fork["aim"]`` names (the tuner lives on), once: armed when
    one first exists, fired at the first one present a random instant later (at once on the
    study's final launch, which may end before the instant: the aim would never be hit).
    Returns the kill, or ``None``."""
    now = time.monotonic()
    if fork["aim"] == "default_child" and ((study / "candidates" / "00001").exists()
                                           or (study / "candidates" / "00000" / "result.json").exists()):
        fork["done"] = True  # the default's process is over in this launch: nothing to aim at
        return None
    pid = fork_server_target(tuner, fork["aim"], study)
    if pid is None:  # (short-lived children: the next one present after the instant is killed)
        return None
    if fork.get("at") is None:  # the final launch (no aim of its own) may be short: at once
        fork["at"] = now + (0.0 if fork.get("last") else rng.uniform(*FORK_AIMS[fork["aim"]]))
        return None
    if now < fork["at"]:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
        fork["done"] = True
        return {"killed": True, "aim": fork["aim"], "phase": f"fork:{observed_phase(study, since, resume)}",
                "resume": resume, "tuner_alive": True}
    return None


def results(study: Path) -> int:
    """How many candidates of ``study`` have a result."""
    return sum(1 for _ in (study / "candidates").glob("*/result.json"))


def launch(study: Study, *, resume: bool, aim: str | None, rng: random.Random, expr: str,
           token: str, logs: Path, timeout: float = 600.0, forks: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run one ``tune``; kill it when ``aim`` fires, and on the way the fork-server processes
    ``forks`` name, one after the other (:func:`fork_kill`). Returns what happened
    (``fork_kills``: those kills)."""
    log = logs / f"{study.name}_{len(list(logs.glob(study.name + '_*'))):02d}.log"
    since = time.time()
    t0 = time.monotonic()
    with log.open("w") as fh:
        proc = subprocess.Popen(tune_argv(study.dir, resume=resume, expr=expr), stdout=fh, stderr=fh,
                                env=environment(token), start_new_session=True)
    fire_at, state, forked = None, {}, []
    pending = list(forks)
    watch = {"aim": pending.pop(0), "last": aim is None} if pending else {"done": True}
    if aim in ("early", "random") and not forks:  # else armed (at once) after the fork-server kills
        fire_at = t0 + rng.uniform(*AIMS[aim][2])
    while proc.poll() is None:  # the tuner's kill waits for the fork-server kills (done or given up)
        if not watch.get("done") and ("after" not in watch or results(study.dir) > watch["after"]):
            kill = fork_kill(study.dir, proc.pid, watch, rng, since, resume)
            if kill is not None:
                forked.append({**kill, "after_s": round(time.monotonic() - t0, 3), "log": str(log)})
            if watch.get("done") and pending:  # the next one in this launch (a study that ends
                # early leaves none unhit), once a candidate more finished: three kills in a row
                # would crash one candidate's three attempts (the tuner's limit), not test them
                watch = {"aim": pending.pop(0), "last": aim is None, "after": results(study.dir)}
        now = time.monotonic()
        if now - t0 > timeout:
            aim, fire_at = "timeout", now
        if fire_at is None and aim in ("candidate", "drift") and armed("revalidation", study.dir, since, state):
            aim = "revalidation"  # that phase is over for this launch: aim at the next one
        if fire_at is None and aim is not None and watch.get("done") and armed(aim, study.dir, since, state):
            low, high = AIMS[aim][2]
            if aim == "creation":  # at once (30 %), within 30 ms (40 %) or within 0.5 s (30 %)
                high = rng.choices([0.0, 0.03, high], [3, 4, 3])[0]
            fire_at = now + rng.uniform(low, high)
        if fire_at is not None and now >= fire_at:
            phase = observed_phase(study.dir, since, resume)
            if proc.poll() is not None:
                break
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return {"killed": True, "aim": aim, "phase": phase, "after_s": round(now - t0, 3),
                    "resume": resume, "log": str(log), "fork_kills": forked}
        time.sleep(0.002 if aim in ("creation", "config", *FILE_AIMS) or not watch.get("done") else 0.02)
    return {"killed": False, "rc": proc.returncode, "resume": resume, "message": tail(log), "log": str(log),
            "fork_kills": forked}


# -- one study ---------------------------------------------------------------------------------
def plan_aims(rng: random.Random) -> list[str]:
    """Kills in time order: start-up, then candidates and drift, then re-validation."""
    middle = ["drift"] * rng.choice([1, 2]) + rng.sample(["candidate", "random", "early"], k=rng.choice([0, 1, 2]))
    rng.shuffle(middle)
    start = rng.choices(["creation", "config", "early"], [4, 3, 3])[0]
    end = rng.sample(["output", "bundle", "bundle"], k=rng.choice([1, 2]))
    # fork-server kills ride along the launches after the start, in this order, one after the
    # other in a launch that lasts: the default's process (likely in flight then), then the
    # launcher's and any candidate's (one per launch had left aims unhit when a launch that
    # was not killed finished the study)
    return [start, "default_child", *rng.sample(["launcher", "child"], k=2), *middle,
            *["revalidation"] * rng.choice([0, 1]), *end]


def check_committed(study: Study, info: dict[str, Any], when: str) -> None:
    """No candidate committed as finished may vanish or change; then remember the new ones."""
    records = {r["number"]: r for r in info.get("records", []) if r["state"] not in ("PENDING", "RUNNING")}
    for number, before in list(study.committed.items()):
        now = records.get(number)
        if now != before:
            what = "missing" if now is None else "changed (" + ", ".join(
                k for k in before if before.get(k) != now.get(k)) + ")"
            study.fail("lost", 1, f"lost: candidate #{number} committed before a kill is {what} {when}")
            del study.committed[number]
    for number, rec in records.items():
        study.committed.setdefault(number, rec)


def after_kill(study: Study, result: dict[str, Any], token: str, grace: float) -> None:
    orphans = wait_orphans(token, study.dir, grace)
    info = read_study(study.dir)
    check_committed(study, info, f"after kill {len(study.kills) + 1}")
    status = show_status(study.dir) if info["initialised"] else f"(no study: {info['why']})"
    result.update(orphans=[cmd[:160] for _, cmd in orphans], show=status,
                  committed=len(study.committed), folder=folder_state(study.dir))
    study.kills.append(result)
    if orphans:
        study.fail("orphans", len(orphans), f"orphans: {len(orphans)} process(es) alive {grace:g} s after "
                   f"kill {len(study.kills)} ({result['phase']}): {result['orphans']}")
    if result["aim"] == "timeout":
        study.problems.append(f"a launch ran past its time limit and was killed: {folder_state(study.dir)}")
    if status == "running":
        study.fail("stale", 1, None if study.faults["stale"] else (
            f"stale status: after kill {len(study.kills)} ({result['phase']}) 'gptuner show' says 'running' "
            "with no tuner alive (the 'stale' column counts every such kill)"))


def attempt(study: Study, aim: str | None, forks: tuple[str, ...] = (), **kw: Any) -> str:
    """One kill (or the final run), with on the way the fork-server kills ``forks``: ``killed``,
    ``done`` (exit 0), ``crashed`` (a launch died with a traceback: not a refusal, or a fork-server
    kill ended the tuner) or ``unusable`` (both ``--continue`` and ``tune`` refuse the folder)."""
    refused, crashed = [], False
    resume = read_study(study.dir)["initialised"]
    for mode in (resume, not resume):
        result = launch(study, resume=mode, aim=aim, forks=forks if mode == resume else (),
                        **{k: kw[k] for k in ("rng", "expr", "token", "logs")})
        for kill in result["fork_kills"]:  # the tuner lived on: it must finish this launch's work
            study.kills.append({**kill, "committed": len(study.committed), "orphans": []})
            if not result["killed"] and result["rc"] != 0:
                study.problems.append(f"fork-server kill ({kill['aim']}, {kill['phase']}) ended the tuner with exit "
                                      f"{result['rc']} instead of running the process again: {result['message']}")
                return "crashed"
        if result["killed"]:
            after_kill(study, result, kw["token"], kw["grace"])
            return "killed"
        if result["rc"] == 0:
            return "done"
        crashed = crashed or result["rc"] != 2 or "Traceback" in Path(result["log"]).read_text(errors="replace")
        refused.append(f"'tune{' --continue' if mode else ''}' exit {result['rc']}: {result['message']}")
        orphans = wait_orphans(kw["token"], study.dir, kw["grace"])
        if orphans:
            study.fail("orphans", len(orphans), f"orphans after a failed launch: {orphans}")
    last = study.kills[-1] if study.kills else {"phase": "no kill", "aim": None}
    where = f"after kill {len(study.kills)} ({last['phase']}, aimed {last['aim']}): {folder_state(study.dir)}; "
    if crashed:
        study.problems.append("crashed: a launch died with a traceback (not a refusal; the study cannot finish) " + where + "; ".join(refused))
        return "crashed"
    study.fail("unusable", 1, "unusable folder " + where + "; ".join(refused))
    return "unusable"


def run_study(study: Study, aims: list[str], control: dict[str, Any], budget: int, **kw: Any) -> None:
    outcome, forks = "killed", []
    for aim in [*aims[:budget], None]:
        if aim in FORK_AIMS:  # rides along the next launch without one
            forks.append(aim)
            continue
        before = len(study.kills)
        outcome = attempt(study, aim, tuple(forks), **kw)
        hit = {k["aim"] for k in study.kills[before:] if k.get("tuner_alive")}
        forks = [f for f in forks if f not in hit]  # the others: the next launch's
        if outcome != "killed":
            break
    info = read_study(study.dir)
    check_committed(study, info, "at the end")
    records = info.get("records", [])
    study.final_count = sum(r["state"] not in ("PENDING", "RUNNING") for r in records)
    numbers = [r["number"] for r in records]
    routes = [" ".join(sorted(r["requested_route"].split())) for r in records
              if "remeasure_of" not in (r.get("strategy_info") or {})]
    for kind, values in (("number", numbers), ("route", routes)):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            study.fail("dup", len(twice), f"duplicated {kind}(s): {twice}")
    if outcome != "done":
        return
    failed = sorted(f"#{r['number']} {r['state']}: {r.get('error')}" for r in records
                    if r["state"] in ("CRASHED", "TIMED_OUT")
                    and " ".join(sorted(r["requested_route"].split())) not in control["failed"])
    if failed:
        study.fail("infra", len(failed), f"infra: candidates the control study completed were recorded as "
                   f"failed: {failed}")
    study.finished = info.get("status") == "finished" and study.final_count == control["count"]
    if not study.finished:
        study.problems.append(f"not finished: status {info.get('status')!r}, {study.final_count} of "
                              f"{control['count']} candidates finished")
    baselines = info.get("baselines", [])
    missing = sorted(set(control["baselines"]) - set(baselines))
    twice = sorted({b for b in baselines if baselines.count(b) > 1})
    if missing or twice:
        cut = sum(k["phase"] == "drift" for k in study.kills)
        what = "; ".join(m for m in (missing and f"baseline(s) after candidate(s) {missing} never redone",
                                     twice and f"baseline(s) after {twice} recorded twice") if m)
        study.fail("drift", len(missing) + len(twice), f"drift: {what} (control has {control['baselines']}; "
                   f"{cut} kill(s) during drift; baselines/ holds "
                   f"{sorted(p.name for p in (study.dir / 'baselines').glob('*'))})")
    check_output(study)
    export_kills(study, rng=kw["rng"], token=kw["token"], grace=kw["grace"], logs=kw["logs"])
    if control["revalidations"] and (not info.get("revalidations") or info.get("winner") is None):
        study.fail("reval", 1, f"re-validation: finished without a re-validation event or a winner "
                   f"({info.get('revalidations')} events, winner {info.get('winner')!r})")


def check_output(study: Study) -> None:
    """The finished study's ``--output`` artifact is there, and its bundle verifies, with no
    partial bundle or temporary file left beside them."""
    from gptuner_core.bundle import load_bundle

    out = output_of(study.dir)
    bundle = out.with_name(out.name + ".bundle")
    problems = []
    if not out.exists() or not out.with_name(out.name + ".json").is_file():
        problems.append(f"no --output artifact (or its .json) at {out}")
    try:
        load_bundle(bundle)
    except Exception as exc:  # noqa: BLE001 - the finding
        problems.append(f"bundle {bundle} does not verify: {exc}")
    left = [p.name for p in study.dir.parent.glob(f".{out.name}*")]
    if left:
        problems.append(f"left beside the output: {left}")
    if problems:
        study.fail("output", 1, "output: " + "; ".join(problems))


def export_argv(study: Path) -> list[str]:
    cache = study.parent / f"{study.name}.cache.jsonl"
    return [sys.executable, "-m", "gptuner_core", "export", str(study), "--trtexec-cache", str(cache)]


def export_kills(study: Study, *, rng: random.Random, token: str, grace: float, logs: Path) -> None:
    """Kill ``gptuner export`` at a random instant (1-2 times): the cache file is then absent or
    whole; the same command run again writes it (else the study counts as ``unusable``)."""
    from gptuner_core.interop.trtexec_cache import read_tuning_cache

    cache = study.dir.parent / f"{study.name}.cache.jsonl"
    for _ in range(rng.choice([1, 2])):
        log = logs / f"{study.name}_export_{len(study.kills):02d}.log"
        with log.open("w") as fh:
            proc = subprocess.Popen(export_argv(study.dir), stdout=fh, stderr=fh, env=environment(token),
                                    start_new_session=True)
        t0 = time.monotonic()
        time.sleep(rng.uniform(0.2, 2.5))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        study.kills.append({"killed": True, "aim": "export", "phase": "export", "resume": False,
                            "after_s": round(time.monotonic() - t0, 3), "committed": len(study.committed),
                            "orphans": [], "log": str(log)})
        wait_orphans(token, study.dir, grace)
        if cache.exists():
            try:
                read_tuning_cache(cache)
            except Exception as exc:  # noqa: BLE001 - the finding
                study.fail("unusable", 1, f"export: a killed export left a torn cache {cache}: {exc}")
    again = subprocess.run(export_argv(study.dir), capture_output=True, text=True, env=environment(token),
                           timeout=300, check=False)
    if again.returncode != 0 or not cache.is_file():
        study.fail("unusable", 1, f"export: run again after a kill, exit {again.returncode}: {again.stderr.strip()[-300:]}")


# -- the whole run -----------------------------------------------------------------------------
def run_control(work: Path, **kw: Any) -> dict[str, Any]:
    study = Study(name="control", dir=work / "control")
    result = launch(study, resume=False, aim=None, **kw)
    info = read_study(study.dir)
    if result["rc"] != 0 or info.get("status") != "finished":
        msg = f"the uninterrupted control study failed (exit {result['rc']}): {result['message']}"
        raise SystemExit(msg)
    return {"count": len(info["records"]), "baselines": info["baselines"],
            "revalidations": info["revalidations"],
            "failed": sorted(" ".join(sorted(r["requested_route"].split())) for r in info["records"]
                             if r["state"] in ("CRASHED", "TIMED_OUT"))}


def row(name: str, values: dict[str, Any]) -> str:
    return f"{name:<9}" + "".join(f"{values[c]!s:>10}" for c in COLUMNS)


def summarize(studies: list[Study], control: dict[str, Any], wall: float, seed: int) -> dict[str, Any]:
    kills = [k for s in studies for k in s.kills]
    phases = {p: sum(k["phase"] == p for k in kills) for p in sorted({k["phase"] for k in kills})}
    per = [{"study": s.name, "kills": len(s.kills), "before": max((k["committed"] for k in s.kills), default=0),
            "after": s.final_count, **s.faults, "finished": "yes" if s.finished else "NO",
            "problems": s.problems, "kill_log": s.kills} for s in studies]
    total = {c: sum(p[c] for p in per) for c in COLUMNS[:-1]}
    total["finished"] = f"{sum(s.finished for s in studies)}/{len(studies)}"
    failures = [f"{s.name}: {p}" for s in studies for p in s.problems]
    print(f"\nkill harness: {len(kills)} SIGKILLs over {len(studies)} studies in {wall:.0f} s (seed {seed}); "
          f"control study: {control['count']} candidates, baselines after {control['baselines']}")
    aims = {a: sum(k["aim"] == a for k in kills) for a in sorted({k["aim"] for k in kills})}
    print("kills per phase: " + ", ".join(f"{k} {v}" for k, v in phases.items())
          + "\nkills per aim:   " + ", ".join(f"{k} {v}" for k, v in aims.items())
          + f"; {sum(k['resume'] for k in kills)} of them killed a 'tune --continue'")
    for name, values in (("study", {c: c for c in COLUMNS}), *((p["study"], p) for p in per), ("total", total)):
        print(row(name, values))
    print("(before: finished candidates committed at the last kill; after: at the end; stale: kills after which "
          "'gptuner show' said 'running'; drift: baselines never redone; reval: re-validation missing)")
    print(f"\nRESULT: {'PASS' if not failures else f'FAIL ({len(failures)} problems)'}")
    for f in failures:
        print(f"  - {f}")
    return {"seed": seed, "wall_s": round(wall, 1), "kills": len(kills), "phases": phases, "aims": aims, "control": control,
            "totals": total, "studies": per, "failures": failures}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=50, help="SIGKILLs to send in all (default 50)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", action="store_true", help="keep the study folders and logs")
    ap.add_argument("--work", type=Path, help="folder for the studies (default: a temporary one)")
    ap.add_argument("--report", type=Path, help="write the summary as JSON here")
    ap.add_argument("--grace", type=float, default=5.0, help="seconds a killed tuner's children get to die")
    ap.add_argument("--expr", default=EXPR, help=f"tunable expression (default: {EXPR!r})")
    args = ap.parse_args(argv)
    work = (args.work or Path(tempfile.mkdtemp(prefix="kill_harness_"))).resolve()
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    token = uuid.uuid4().hex
    kw = {"rng": rng, "expr": args.expr, "token": token, "logs": logs}
    t0 = time.monotonic()
    studies: list[Study] = []
    try:
        control = run_control(work, **kw)
        sent = 0
        while sent < args.kills and len(studies) < args.kills + 5:
            study = Study(name=f"s{len(studies):02d}", dir=work / f"s{len(studies):02d}")
            studies.append(study)
            run_study(study, plan_aims(rng), control, args.kills - sent, grace=args.grace, **kw)
            sent += len(study.kills)
            print(f"{study.name}: {len(study.kills)} kills ({', '.join(k['phase'] for k in study.kills)}), "
                  f"{'finished' if study.finished else 'NOT finished'}, {len(study.problems)} problem(s)  "
                  f"[{sent}/{args.kills} kills, {time.monotonic() - t0:.0f} s]", flush=True)
        report = summarize(studies, control, time.monotonic() - t0, args.seed)
    finally:
        for pid, _ in our_processes(token, None):  # only what our tuners started
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.report:
        args.report.write_text(json.dumps(report, indent=1, default=str), encoding="utf-8")
    if args.keep:
        print(f"folders and logs kept in {work}")
    return 0 if not report["failures"] else 1


if __name__ == "__main__":
    sys.exit(main())
