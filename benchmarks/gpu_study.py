"""The GPU study at the speed of the GPU: today's sequential path against the fork server with
builds overlapped, the same ResNet-50 study side by side on one machine (issue 29).

Modes (each ``gptuner tune ... --study DIR/<mode>`` in a fresh process):

* ``old``: ``GPTUNER_START_METHOD=spawn GPTUNER_OVERLAP=off --build-workers 1``: every candidate
  and every re-validation process a spawned interpreter, one candidate at a time (the code
  before issue 29);
* ``new``: the torch fork server (``GPTUNER_START_METHOD=auto``), ``GPTUNER_OVERLAP=on`` and
  ``--build-workers K``: candidates build beside the one being measured and measure in the
  process that built them.

One JSON line per mode: wall seconds to the verdict, screening seconds (first candidate started
to last finished), GPU busy share during screening and over the whole run (NVML utilisation
sampled every 0.2 s by this process), start-up per process (median and max, candidates and
re-validation: request to the child's first phase), seconds per re-validation round split into
start-up, compile (the model, CUDA's set-up and the route from the warm Inductor cache) and
measure, the winner and verdict, and the set-up's steps before the first candidate
(``startup``: ``$GPTUNER_STARTUP_TRACE``) and the study's floor beside its limit
(``study_bounds.py``); then the ratio. It measures; it asserts nothing::

    unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONPATH=$PWD
    python3 benchmarks/gpu_study.py --dir /tmp/gs --modes new,old --build-workers 5
    python3 benchmarks/gpu_study.py --dir /tmp/gs --build-workers 7 --json gs.jsonl \
        --plan vit_b_16:new,vit_b_16:new,vit_b_16:new,convnext_tiny:new,resnet50:new,resnet50:old
    python3 benchmarks/gpu_study.py --summarize gs.jsonl

``--plan`` runs torchvision models (``benchmarks/torchvision_models.py``: ResNet-50 b32,
ConvNeXt-Tiny b16, ViT-B/16 b8) over issue 38's 6 routes (:data:`EXPR6`, the best two
re-validated in 4 rounds); each row adds the named route's tie (if any), processes refused for
running other code than the screened build, and the study's limit and floor
(``study_bounds.py``); the summary gives, per model, the old/new wall ratio, the new mode's wall
and floor over its limit and whether every run named the same route.

Without ``-- TUNE_ARGS`` it tunes ResNet-50 (``benchmarks/resnet50_model.py``, random weights,
batch 32) over 8 routes: ``-torch:mode=[default|reduce-overhead]
-torch:precision=[fp32|tf32|bf16|fp16]``, ``--search full``, re-validation of the best against
the default (``--revalidate-top-k 1 --revalidate-rounds 4``), ``max_time_s=3`` per screening.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from study_bounds import floor_s
from study_bounds import limit_s


ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "benchmarks" / "resnet50_model.py"
EXPR = "-torch:mode=[default|reduce-overhead] -torch:precision=[fp32|tf32|bf16|fp16]"
ENV = {
    "old": {"GPTUNER_START_METHOD": "spawn", "GPTUNER_OVERLAP": "off"},
    "new": {"GPTUNER_START_METHOD": "auto", "GPTUNER_OVERLAP": "on"},
}


#: issue 38's study: 6 routes, the best two re-validated against the default in 4 rounds
EXPR6 = "-torch:mode=[default|reduce-overhead] -torch:precision=[fp32|bf16|fp16]"


def model_tune_args(folder: Path, device: str, name: str) -> list[str]:
    """A torchvision model of ``benchmarks/torchvision_models.py`` over :data:`EXPR6`."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from torchvision_models import MODELS
    from torchvision_models import write_dataset

    data = folder / f"{name}.npz"
    if not data.exists():
        folder.mkdir(parents=True, exist_ok=True)
        write_dataset(str(data), name)
    return [f"{ROOT / 'benchmarks' / 'torchvision_models.py'}:{name}", "--backend", "torch",
            "--backend-option", f"device={device}", "--expr", EXPR6, "--search", "full",
            "--dataset", str(data), "--batch-size", str(MODELS[name][1]), "--metric", "cos",
            "--epsilon", "0.05", "--revalidate-top-k", "2", "--revalidate-rounds", "4",
            "--measure-option", "max_time_s=3"]


def default_tune_args(folder: Path, device: str) -> list[str]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from resnet50_model import write_dataset

    data = folder / "resnet50_b32.npz"
    if not data.exists():
        folder.mkdir(parents=True, exist_ok=True)
        write_dataset(str(data))
    return [f"{MODEL}:factory", "--backend", "torch", "--backend-option", f"device={device}",
            "--expr", EXPR, "--search", "full", "--dataset", str(data), "--batch-size", "32",
            "--metric", "cos", "--epsilon", "0.05", "--revalidate-top-k", "1",
            "--revalidate-rounds", "4", "--measure-option", "max_time_s=3"]


def _child(mode: str, workers: int, study: str, tune_args: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    import logging

    from gptuner_core.cli import console

    logging.basicConfig(level=logging.WARNING)
    _round_loads(os.environ.get(ROUND_LOADS, ""))
    _load_threads(os.environ.get(LOAD_THREADS, ""))
    _rounds_from(os.environ.get(ROUNDS_FROM, ""))
    build_workers = 1 if mode == "old" else workers
    # as the gptuner command ends (cli.console): its exit without the interpreter's teardown
    console(["tune", *tune_args, "--build-workers", str(build_workers), "--study", study, "--quiet"])


#: this benchmark's A/B of how many round processes load at once (issue 38 item 2): unset, the
#: tuner's own rule (one per build core); a number; or ``physical``, one per physical build core
ROUND_LOADS = "GS_ROUND_LOADS"


def _round_loads(value: str) -> None:
    """Replace the tuner's ``round_prefetch.room`` in this study's process, as ``value`` says."""
    if not value:
        return
    from gptuner_core.engine.evaluate import round_prefetch
    from gptuner_core.engine.scale.overlap import thread_siblings

    if value == "physical":
        def room(cpus: tuple[int, ...]) -> int:
            return max(len({thread_siblings(c) & set(cpus) for c in cpus}), 2)
    else:
        def room(cpus: tuple[int, ...]) -> int:
            return int(value)
    round_prefetch.room = room


#: this benchmark's A/B of the threads a build process and a round's process loading ahead build
#: the model on (issue 38 item 2): unset, the tuner's (one); ``default``, torch's (one per core)
LOAD_THREADS = "GS_LOAD_THREADS"


def _load_threads(value: str) -> None:
    """``default``: the torch fork server of this study runs :func:`factory_on_default_threads`
    after its preload, so every round process it forks builds its model as before the change."""
    if value != "default":
        return
    from gptuner_core.engine.process import launcher_main

    preload, forbidden = launcher_main.KINDS["torch"]
    launcher_main.KINDS["torch"] = ((*preload, "gpu_study:factory_on_default_threads"), forbidden)


def factory_on_default_threads() -> None:
    """In the fork server (``GS_LOAD_THREADS=default``): the model's factory keeps torch's
    thread count in a build process and in a round's process loading ahead."""
    from gptuner_core.backends.torch_inductor import model

    model.load_model_on_one_thread = model.load_model


#: this benchmark's A/B of when round processes start ahead (issue 38 item 2, session 50): unset,
#: the tuner's rule (from the default route's build); ``result``: only once the default has a
#: result, as before session 50
ROUNDS_FROM = "GS_ROUNDS_FROM"


def _rounds_from(value: str) -> None:
    """``result``: this study's hints to start round processes wait for the default's result."""
    if value != "result":
        return
    from gptuner_core.engine.loop import tuner

    real = tuner.start_rounds_ahead

    def after_result(cfg, evaluator, history, **kw):  # type: ignore[no-untyped-def]
        if history and history[0].number == 0:
            real(cfg, evaluator, history, **kw)

    tuner.start_rounds_ahead = after_result


def fresh_folder(path: Path) -> Path:
    """``path``, or ``path-2``, ``path-3``... where an earlier run left that study: a study folder
    that exists would be resumed from its cache, and its wall (5.6 s for ResNet-50 on a warm
    machine, against 46 s measured) would stand for a study that measured nothing."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}-{n}")
    return candidate


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def timeline(study: Path, start: float, recs) -> dict:
    """Each process's phases, seconds from the study's start: the candidates' (``NNNNN``, ending
    with their result's time) and the re-validation rounds' (``rR_NNNNN``), from their ``phase``
    files (where a study's time goes), each candidate's device steps (its log), and when the
    rounds after round 0 were asked for (``hints``: ``[seconds, [rR_NNNNN, ...]]``)."""
    from gptuner_core.engine.evaluate.round_prefetch import read_hints
    from gptuner_core.engine.process.child import STEPS
    from gptuner_core.engine.process.isolation import LOG

    out: dict[str, list] = {}
    for folder in ("candidates", "revalidation"):
        for phase in sorted((study / folder).glob("*/phase")):
            with contextlib.suppress(OSError, ValueError):
                rows = [line.split() for line in phase.read_text(encoding="utf-8").splitlines()]
                out[phase.parent.name] = [[name, round(float(t) - start, 2)] for name, t in rows]
    for r in (r for r in recs if r.finished_at):
        out.setdefault(f"{r.number:05d}", []).append(["end", round(r.finished_at - start, 2)])
    for log in sorted((study / "candidates").glob(f"*/{LOG}")):  # the device turn's steps (child.py)
        with contextlib.suppress(OSError, ValueError):
            line = next((x for x in log.read_text(encoding="utf-8", errors="replace").splitlines()
                         if x.startswith(STEPS)), "")
            if line and log.parent.name in out:
                out[log.parent.name].append(["steps", json.loads(line[len(STEPS):])])
    out["hints"] = [[round(t - start, 2), [c for c in calls if not c.startswith("r0_")]] for t, calls in read_hints(study)]
    for log in sorted((study / "revalidation").glob(f"*/{LOG}")):  # a round's load, in steps (reload.py)
        with contextlib.suppress(OSError, ValueError):
            line = next((x for x in log.read_text(encoding="utf-8", errors="replace").splitlines()
                         if x.startswith(LOADED) and " s ({" in x), "")
            if line and log.parent.name in out:
                out[log.parent.name].append(["load", json.loads(line[line.index(" s ({") + 4:-1])])
    return out


LOADED = "torch backend: loaded "  # reload.compiled_for's line in a process's log


def summary(mode: str, study: Path, wall: float, busy, start: float, end: float, workers: int = 1) -> dict:
    from gptuner_core.engine.evaluate.rounds import round_times
    from gptuner_core.storage import open_store

    with open_store(study, readonly=True) as store:
        recs, winner = store.candidates(), store.winner()
        events = [e.payload for e in store.events("revalidation")]
    best = recs[winner.number] if winner and winner.number is not None else None
    started = [r.started_at for r in recs if r.started_at]
    finished = [r.finished_at for r in recs if r.finished_at]
    s0, s1 = (min(started), max(finished)) if started and finished else (start, end)
    cand_start = [float((r.extra.get("phase_times") or {}).get("start", 0)) for r in recs
                  if (r.extra.get("phase_times") or {}).get("start") is not None]
    rounds = next((e["round_times"] for e in events if e.get("round_times")), None) or round_times(study)
    reval_start = [r["startup"] / r["processes"] for r in rounds if r.get("processes")]
    return {
        "mode": mode, "env": ENV.get(mode, {}), "wall_s": round(wall, 1), "candidates": len(recs),
        "screening_s": round(s1 - s0, 1), "finish_s": round(end - s1, 1),
        "gpu_busy_screening": busy.share(s0, s1) if busy else None,
        "gpu_busy_run": busy.share(start, end) if busy else None,
        "gpu_busy_source": busy.source if busy else "",
        "startup_candidates_median_s": _median(cand_start),
        "startup_candidates_max_s": round(max(cand_start), 3) if cand_start else None,
        "startup_rounds_mean_per_process_s": _median(reval_start),
        "build_s": round(sum(r.build_time_s or 0 for r in recs), 1),
        "states": {s: sum(1 for r in recs if r.state.value == s) for s in sorted({r.state.value for r in recs})},
        "rounds": rounds,
        "round_s_median": _median([r["total"] for r in rounds]),
        "round_wall_s_median": _median([r["wall"] for r in rounds if "wall" in r]),
        "winner": best.requested_route if best else None,
        "speedup": winner.speedup if winner else None,
        "ci": list(winner.ci) if winner and winner.ci else None,
        "verdict": winner.verdict.value if winner and winner.verdict else None,
        "headline": winner.headline() if winner else None,
        "tie": winner.tie if winner else "",
        "refused": [c.get("error") for e in events for c in e.get("contenders", [])
                    if "other code than the screened build" in (c.get("error") or "")],
        **limit_s(recs, rounds, workers),
        **device_spans(recs),
        "timeline": timeline(study, start, recs),
    }


def startup(trace: Path, start: float) -> list:
    """The set-up's steps (``who``, ``step``, start and end in seconds from the study's start):
    the CLI's input shapes and its fork server's start, each module the fork server imported."""
    from gptuner_core.engine.process.startup_trace import read

    return [[r["who"], r["step"], round(r["start"] - start, 2), round(r["end"] - start, 2)]
            for r in read(trace)]


def device_spans(recs) -> dict:
    """Seconds the candidates held the device alone (each one's ``measure_start`` to
    ``measure_end``, summed) and from the first candidate's warmup on the shared device to the
    last one's end alone: the screening's device phase, and how much of it is exclusive."""
    alone, first, last = 0.0, None, None
    for r in recs:
        tl = r.extra.get("timeline") or {}
        if "measure_start" in tl and "measure_end" in tl:
            alone += tl["measure_end"] - tl["measure_start"]
            begin = tl.get("warmup_start", tl["measure_start"])
            first = begin if first is None else min(first, begin)
            last = tl["measure_end"] if last is None else max(last, tl["measure_end"])
    span = round(last - first, 1) if first is not None and last is not None else None
    return {"device_alone_s": round(alone, 1), "device_phase_s": span}


def _emit(row: dict, path: str | None) -> None:
    line = json.dumps(row)
    print(line, flush=True)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def summarize(rows: list[dict]) -> list[dict]:
    """Per model: the median wall of each mode, their ratio, the new mode's wall over its limit,
    and whether every run (both modes, every repeat) named the same route."""
    out = []
    for model in dict.fromkeys(r.get("model", "") for r in rows if "mode" in r):
        mine = [r for r in rows if r.get("model", "") == model and "mode" in r]
        walls = {m: [r["wall_s"] for r in mine if r["mode"] == m] for m in ("new", "old")}
        med = {m: statistics.median(w) for m, w in walls.items() if w}
        new = [r for r in mine if r["mode"] == "new"]
        out.append({
            "model": model, "runs": {m: len(w) for m, w in walls.items()},
            "wall_new_s": walls["new"], "wall_old_s": walls["old"],
            "wall_ratio": round(med["old"] / med["new"], 2) if len(med) == 2 else None,
            "named": sorted({r["winner"] or "default" for r in mine}),
            "same_named_route": len({r["winner"] for r in mine}) == 1,
            "ties": sorted({r.get("tie") or "" for r in mine} - {""}),
            "new_wall_over_limit": [round(r["wall_s"] / r["limit_s"], 2) for r in new if r.get("limit_s")],
            "new_floor_over_limit": [round(floor_s(r)["floor_s"] / r["limit_s"], 2) for r in new
                                     if r.get("limit_s")],
            "round_wall_s_median_new": [r.get("round_wall_s_median") for r in new],
        })
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        return _child(argv[1], int(argv[2]), argv[3], argv[4:])
    tune_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=False)
    parser.add_argument("--modes", default="new,old")
    parser.add_argument("--plan", default=None,
                        help="MODEL:MODE,... studies of benchmarks/torchvision_models.py over the "
                             "6-route space, in this order (e.g. vit_b_16:new,vit_b_16:old)")
    parser.add_argument("--build-workers", type=int, default=0, help="0: from cores and memory")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--json", default=None, help="append the JSON lines here too")
    parser.add_argument("--summarize", default=None, help="print the per-model summary of a --json file")
    args = parser.parse_args(own)
    if args.summarize:
        rows = [json.loads(line) for line in Path(args.summarize).read_text().splitlines() if line.strip()]
        for row in summarize(rows):
            print(json.dumps(row), flush=True)
        return 0
    if args.dir is None:
        parser.error("--dir is required (unless --summarize)")
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_busy import GpuBusy

    from gptuner_core.engine.scale.scale_out import default_build_workers

    workers = args.build_workers or default_build_workers()
    if args.plan:
        plan = [tuple(item.split(":")) for item in args.plan.split(",")]
    else:
        plan = [("", mode) for mode in args.modes.split(",")]
    rows = []
    for i, (model, mode) in enumerate(plan):
        args_i = (model_tune_args(args.dir, args.device, model) if model
                  else tune_args or default_tune_args(args.dir, args.device))
        print(f"study {i}: {model or 'resnet50 (8 routes)'} {mode}:", json.dumps(args_i),
              f"build workers (new): {workers}", flush=True)
        study = fresh_folder(args.dir / f"{i:02d}_{model or 'default'}_{mode}")
        busy = GpuBusy(int(args.device.partition(":")[2] or 0)).start() if args.device != "cpu" else None
        t0, start = time.perf_counter(), time.time()
        trace = study.parent / f"{study.name}_startup.jsonl"  # the set-up's steps (startup_trace)
        trace.parent.mkdir(parents=True, exist_ok=True)  # before the study makes its folder
        trace.unlink(missing_ok=True)
        env = {**os.environ, **ENV.get(mode, {}), "GPTUNER_STARTUP_TRACE": str(trace)}
        code = subprocess.call([sys.executable, __file__, "--child", mode, str(workers), str(study), *args_i],
                               env=env)
        wall, end = time.perf_counter() - t0, time.time()
        if busy:
            busy.stop()
        row = {"model": model, "exit": code, "round_loads": os.environ.get(ROUND_LOADS, ""),
               "load_threads": os.environ.get(LOAD_THREADS, "") or "one",
               "rounds_from": os.environ.get(ROUNDS_FROM, "") or "build",
               **summary(mode, study, wall, busy, start, end, workers if mode == "new" else 1),
               "startup": startup(trace, start)}
        row.update(floor_s(row))
        rows.append(row)
        _emit(row, args.json)
    for row in summarize(rows):
        _emit({"summary": True, **row}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
