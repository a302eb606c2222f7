"""A/A on the torch backend: how often does the tuner's own re-validation crown one of several
copies of the default route?

One real study builds the default route once (``gptuner tune MODEL --backend torch ...`` with the
default route alone, ``--revalidate-top-k 0``). Each A/A study then takes ``--copies`` copies of
that candidate, kept distinct (numbers 0..copies-1, each measured on its own, as a repeated
default route would be), and runs the tuner's own path on them:

* screening: each copy measured once in a fresh process (``IsolatedEvaluator.remeasure``: the
  backend's measuring process, which loads the build from its Inductor cache), the speed-ups
  against copy 0 computed by ``verdict.with_speedup``;
* re-validation: ``finish.revalidate_winner`` (the function the tuner calls after screening):
  sequential interleaved rounds in fresh processes of the top-k copies against copy 0, Pocock
  alpha spending, until each copy is winner / not faster, or the round budget makes it
  inconclusive.

The device lock of the study's measuring device is held for the whole benchmark. A false winner
is any winner. ``--time-budget`` stops starting new A/A studies once spent (the table says how
many ran); ``--first-study`` numbers (and seeds) a continuation, so two runs add up to 20.

Real effect (``--effect-expr``): the setup study screens the default and the one-off variants of
an expression (``--search fast``), and the variant whose screening speed-up is nearest
``--effect-target`` (1.10) is taken as route B; each study then screens the default and B in fresh
processes and re-validates B against the default as above. "Decided faster" is a study naming B
the winner; the table gives the effect really present (median of the studies' re-validated
speed-ups), so the figure is read against the true speed-up, not the intended one.

    # the lent H200 (the bundled torch sample, batch 32); its image sets PYTHONDONTWRITEBYTECODE,
    # so without a bytecode cache every fresh process compiles torch's sources again (16.8 s
    # to import torch + Inductor there, 4.4 s from a cache):
    unset PYTHONDONTWRITEBYTECODE; export PYTHONPYCACHEPREFIX=/tmp/pyc PYTHONPATH=$PWD
    python3 benchmarks/aa_torch.py --device cuda:0 --dir /tmp/aa --copies 2 --rounds 6 \
        --repeats 20 --time-budget 440

Cost: every measurement is a fresh process (import torch, load from the Inductor cache, time):
about 7.7 s each on the lent H200, so one A/A study of 2 copies and 6 rounds (14 processes)
took about 108 s there.
    # smoke run on the CPU:
    .venv/bin/python benchmarks/aa_torch.py --device cpu --dir /tmp/aa --repeats 1 --copies 2 \\
        --rounds 4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def build_default(study: Path, args: argparse.Namespace) -> None:
    """The one real study: the default route, built and measured by ``gptuner tune``."""
    from gptuner_core.cli import main

    if (study / "study.sqlite").exists():
        return
    expr, search = (args.effect_expr, "fast") if args.effect_expr else ("-torch:precision=fp32", "full")
    argv = [
        "tune", args.model, "--backend", "torch", "--backend-option", f"device={args.device}",
        "--expr", expr, "--search", search, "--dataset", args.dataset,
        "--batch-size", str(args.batch_size), "--metric", "cos", "--epsilon", "0.01",
        "--revalidate-top-k", "0", "--revalidate-rounds", str(args.rounds),
        "--study", str(study), "--quiet",
    ]
    print("setup:", shlex.join(["gptuner", *argv]), flush=True)
    code = main(argv)
    if code not in (0, 3):
        raise SystemExit(f"setup study failed with exit code {code}")


def open_study(study: Path, effect_target: float | None = None):
    """The study's settings, its default candidate, an evaluator over its folder and (with
    ``effect_target``) the eligible variant whose screening speed-up is nearest it."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.evaluate.evaluator import study_evaluator
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.storage import open_store

    ws = StudyWorkspace(study)
    with open_store(ws.root, readonly=True) as store:
        cfg = StudyConfig.from_json(store.config())
        default = store.candidate(0)
        variants = [c for c in store.candidates() if c.number != 0 and c.eligible and c.speedup]
    if default is None or not default.eligible:
        raise SystemExit(f"the setup study's default route did not measure: {default}")
    effect = None
    if effect_target is not None:
        for c in variants:
            print(f"  variant #{c.number} {c.requested_route}: screened {c.speedup:.3f}x", flush=True)
        if not variants:
            raise SystemExit("no variant of --effect-expr built, measured and passed accuracy")
        effect = min(variants, key=lambda c: abs(c.speedup - effect_target))
    return cfg, default, study_evaluator(ws, cfg), effect


def one_study(index: int, cfg, default, evaluator, store, copies: int, effect=None) -> dict:
    """Screen ``copies`` copies of the default in fresh processes (or the default and the
    ``effect`` route), then the tuner's re-validation."""
    from gptuner_core.engine.decide import verdict
    from gptuner_core.engine.decide.finish import revalidate_winner
    from gptuner_core.engine.evaluate.rounds import round_times
    from gptuner_core.records import CandidateState

    t0 = time.perf_counter()
    history = []
    routes = [default, effect] if effect is not None else [default] * copies
    # a study of the same number from an earlier call on this machine (same --dir): its rounds
    # would be read with this one's (session 52: rounds 9-11 of another study in round_times)
    shutil.rmtree(evaluator.ctx.workspace.root / "aa" / f"s{index:02d}", ignore_errors=True)
    prefixed = _Prefixed(evaluator, f"aa/s{index:02d}")
    rounds_ahead(cfg, prefixed, [route.replace(number=n) for n, route in enumerate(routes)])
    for number, route in enumerate(routes):
        res = evaluator.remeasure(route, f"aa/s{index:02d}/screen_{number:02d}")
        if not res.ok or res.latency is None:
            raise SystemExit(f"A/A study {index}: copy #{number} did not measure: {res.error}")
        rec = route.replace(number=number, state=CandidateState.COMPLETE, latency=res.latency,
                              samples_ms=res.samples_ms, speedup=None, speedup_ci=None)
        history.append(verdict.with_speedup(rec, history[0] if history else None))
    screen_s = time.perf_counter() - t0
    study_cfg = cfg.replace(seed=index)
    began = time.time()  # round 0's wall: from here (its processes started before screening)
    won = revalidate_winner(study_cfg, prefixed, store, history)
    screened = {r.number: (r.speedup or 1.0) for r in history}
    return {
        "study": index, "screen_speedups": screened, "verdict": won.verdict.value if won else "-",
        "winner": won.number if won is not None and won.significant else None,
        "claim": won.headline() if won is not None else "-", "rounds": won.rounds if won else 0,
        # the re-validated estimate of route B against the default, winner or not
        "speedup": (won.speedup if won.significant else won.best_speedup) if won is not None else None,
        "screen_s": screen_s, "wall_s": time.perf_counter() - t0,
        "round_times": round_times(evaluator.ctx.workspace.root / "aa" / f"s{index:02d}", since=began),
        "method": won.method if won is not None else "",
        "ci": list(won.best_ci or won.ci or ()) if won is not None else None,
        "projected_rounds": won.projected_rounds if won is not None else None,
        "round_medians": round_medians(evaluator.ctx.workspace.root / "aa" / f"s{index:02d}",
                                       set(range(len(routes)))),
    }


def round_medians(root: Path, numbers: set[int]) -> dict[str, dict[str, float]]:
    """Each re-validation round's per-process median (ms) by route number (``numbers``), from the
    rounds' samples as a bundle reads them (``revalidation/rR_NNNNN``): what an undecided study's
    interval rests on."""
    import statistics

    from gptuner_core.bundle.write import _round_samples

    out: dict[str, dict[str, float]] = {}
    for number, rounds in sorted(_round_samples(root, numbers).items(), key=lambda kv: int(kv[0])):
        for rnd, samples in rounds.items():
            if samples:
                out.setdefault(rnd.removeprefix("r"), {})[number] = round(statistics.median(samples), 4)
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def rounds_ahead(cfg, prefixed, records) -> None:
    """Start the re-validation processes of every copy now, as the tuner does once every candidate
    is built (``finish.start_rounds_ahead``): here every copy's build is in the Inductor cache from
    the setup study before screening starts, so they load while the copies are screened and round 0
    does not wait for their compile (the processes stay fresh per round; unused ones are cancelled)."""
    from gptuner_core.engine.decide.finish import round_call

    if prefixed.prefetching():
        prefixed.prefetch_rounds([round_call(rec, r) for r in range(max(cfg.revalidate_rounds, 2))
                                  for rec in records])


class _Prefixed:
    """The study's evaluator, its re-measurement folders under ``aa/sNN/`` (one per A/A study);
    with overlap on, a round's processes start together as in the tuner (``round_prefetch``)."""

    def __init__(self, inner, prefix: str) -> None:
        self.inner, self.prefix = inner, prefix

    def remeasure(self, record, purpose: str, scale: float = 1.0):
        return self.inner.remeasure(record, f"{self.prefix}/{purpose}", scale)

    def prefetching(self) -> bool:
        return self.inner.prefetching()

    def prefetch_rounds(self, calls) -> None:
        self.inner.prefetch_rounds([dataclasses.replace(call, purpose=f"{self.prefix}/{call.purpose}")
                                    for call in calls])

    def cancel_prefetched(self) -> None:
        self.inner.cancel_prefetched()


BACKGROUND_ROUTES = ("-torch:precision=bf16", "-torch:precision=fp16", "-torch:mode=reduce-overhead",
                     "-torch:precision=tf32")


class Background:
    """``n`` threads, each building routes of the model one after another in fresh processes
    (``build_only``, the build cores) until stopped: the builds that run beside a measurement
    when builds overlap measurement."""

    def __init__(self, evaluator, n: int, folder: Path) -> None:
        import threading

        from gptuner_core.engine.scale.overlap import core_split

        self.evaluator, self.folder, self.builds = evaluator, folder, 0
        self.split = core_split()
        self.stop_event = threading.Event()
        self.threads = [threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def _work(self, i: int) -> None:
        from gptuner_core.engine.evaluate.evaluator import BUILD_ONLY_TARGET

        k = 0
        while not self.stop_event.is_set():
            route = BACKGROUND_ROUTES[(i + k) % len(BACKGROUND_ROUTES)]
            job = self.evaluator.job(route).replace(turn={"build_cpus": list(self.split.build)})
            work = self.folder / f"bg{i}_{k}"
            self.evaluator._run(BUILD_ONLY_TARGET, job, work, self.evaluator._timeouts())  # noqa: SLF001
            shutil.rmtree(work, ignore_errors=True)
            self.builds, k = self.builds + 1, k + 1

    def stop(self) -> int:
        self.stop_event.set()
        for t in self.threads:
            t.join()
        return self.builds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda:0", help="torch device (cuda:0)")
    p.add_argument("--dir", required=True, help="work folder (the setup study is DIR/study)")
    p.add_argument("--model", default=str(ROOT / "assets" / "torch_digits_cnn.py"))
    p.add_argument("--dataset", default=str(ROOT / "assets" / "torch_digits_eval.npz"))
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--copies", type=int, default=4, help="copies of the default route (4)")
    p.add_argument("--repeats", type=int, default=20, help="A/A studies (20)")
    p.add_argument("--first-study", type=int, default=0, help="number (and seed) of the first")
    p.add_argument("--rounds", type=int, default=12, help="re-validation round budget (12, the tuner's)")
    p.add_argument("--time-budget", type=float, default=None, help="seconds; no new study after")
    p.add_argument("--json", default=None, help="append one JSON line per study here")
    p.add_argument("--effect-expr", default=None,
                   help="real effect: screen the one-off variants of this expression, take the one "
                        "nearest --effect-target as route B, re-validate B against the default")
    p.add_argument("--effect-target", type=float, default=1.10, help="screening speed-up wanted (1.10)")
    p.add_argument("--background-builds", type=int, default=0,
                   help="builds kept running beside the measurements (overlap on: GPTUNER_OVERLAP=on)")
    args = p.parse_args(argv)

    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.device_lock import measuring_devices
    from gptuner_core.engine.loop.sink import measuring_device
    from gptuner_core.storage import open_store

    t_start = time.perf_counter()
    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]), flush=True)
    study = Path(args.dir) / "study"
    build_default(study, args)
    cfg, default, evaluator, effect = open_study(study, args.effect_target if args.effect_expr else None)
    if effect is not None:
        args.copies = 2
        print(f"route B: #{effect.number} {effect.requested_route} (screened {effect.speedup:.3f}x)")
    cfg = cfg.replace(revalidate_top_k=args.copies - 1, revalidate_rounds=args.rounds)
    device = measuring_device(cfg)
    lock = DeviceLock(measuring_devices(device), study=f"{study} (A/A benchmark)") if device else None
    print(f"{args.copies} copies of the default route of {Path(args.model).name} (batch "
          f"{args.batch_size}) on {args.device}; default screened at {default.latency.median_ms:.4f} ms; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; re-validation: top-{args.copies - 1}, "
          f"<= {args.rounds} rounds, min-effect {cfg.min_effect:.0%}", flush=True)
    print("| study | screening speed-ups vs copy 0 | verdict | rounds | claim | s | s per round |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    with open_store(study) as store:
        import contextlib

        background = Background(evaluator, args.background_builds, study / "aa" / "background") \
            if args.background_builds else None
        with lock.held(None) if lock else contextlib.nullcontext():
            for index in range(args.first_study, args.first_study + args.repeats):
                if args.time_budget is not None and time.perf_counter() - t_start > args.time_budget:
                    print(f"(time budget of {args.time_budget:.0f} s spent: stopped before study {index})")
                    break
                row = one_study(index, cfg, default, evaluator, store, args.copies, effect)
                rows.append(row)
                screened = ", ".join(f"#{n} {s:.3f}x" for n, s in row["screen_speedups"].items() if n)
                per_round = [r["total"] for r in row["round_times"]]
                print(f"| {index} | {screened} | {row['verdict']} | {row['rounds']} | {row['claim']} "
                      f"| {row['wall_s']:.1f} | {json.dumps(per_round)} |", flush=True)
                if args.json:
                    with open(args.json, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps(row) + "\n")
        if background is not None:
            print(f"background builds beside the measurements: {background.stop()} "
                  f"(on cores {list(background.split.build)}; measuring cores {list(background.split.measure)})")
    false = sum(r["winner"] is not None for r in rows)
    inconclusive = sum(r["verdict"] == "inconclusive" for r in rows)
    print()
    if effect is not None:
        import statistics

        found = [r["speedup"] for r in rows if r["speedup"]]
        present = f"{statistics.median(found):.3f}x" if found else "-"
        print(f"real-effect studies: {len(rows)}; route B decided faster: {false} / {len(rows)}; "
              f"inconclusive: {inconclusive} / {len(rows)}; effect present (median re-validated "
              f"speed-up): {present}; mean {sum(r['wall_s'] for r in rows) / max(len(rows), 1):.1f} s "
              f"per study; total {time.perf_counter() - t_start:.0f} s")
        return 0
    print(f"A/A studies: {len(rows)}; false winners: {false} / {len(rows)}; inconclusive: "
          f"{inconclusive} / {len(rows)}; mean {sum(r['wall_s'] for r in rows) / max(len(rows), 1):.1f} s "
          f"per study; total {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
