"""``gptuner show`` (ranked table of a study) and ``gptuner stop`` (request a stop)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import at_least
from gptuner_core.records.verdict_text import SCREENING


def ranking_rows(study: str | Path) -> tuple[dict, list[list[str]]]:
    """Header facts and ranked rows: eligible by median latency, then the excluded."""
    from gptuner_core.engine.process.launch import is_running
    from gptuner_core.records import shown_status
    from gptuner_core.storage import open_store

    with open_store(study, readonly=True) as store:
        records = store.candidates()
        meta = {
            "status": shown_status(store.get_meta("status"), is_running(study)),
            "message": store.get_meta("status_message", ""),
            "winner": store.get_meta("winner"),
            "health": store.get_meta("health"),
            "config": store.config(),
            "disk_use": store.get_meta("disk_use"),
        }
        sd = _process_sd(store, records)
    shaped = any(r.extra.get("shapes") for r in records)
    meta["process_sd"] = sd
    meta["objective"] = next((r.extra.get("shape_objective") for r in records if r.extra.get("shapes")), None)
    eligible = sorted(  # several shapes: by the objective's speed-up, else by median latency
        (r for r in records if r.eligible),
        key=(lambda r: -(r.speedup or 0.0)) if shaped else (lambda r: r.latency.median_ms),  # type: ignore[union-attr]
    )
    others = [r for r in records if not r.eligible]
    marks = _verdict_marks(meta["winner"])
    rows = []
    for rank, r in enumerate(eligible + others, 1):
        lat = r.latency
        ci = f"[{r.speedup_ci[0]:.3f}, {r.speedup_ci[1]:.3f}]" if r.speedup_ci else ""
        acc = ""
        if r.accuracy is not None:
            worst = max(r.accuracy.losses.values(), default=0.0)
            acc = f"{r.accuracy.metric}={worst:.3g}"
            if r.accuracy.task_metric is not None:
                acc += f" {r.accuracy.task_metric_name or 'task'}={r.accuracy.task_metric:.4f}"
        rows.append([
            str(rank) if r.eligible else "-",
            str(r.number),
            marks.get(r.number, ""),
            r.state.value,
            f"{lat.median_ms:.4f}" if lat else "",
            f"{r.speedup:.3f}x" if r.speedup else "",
            ci,
            _across(r, sd),
            acc,
            r.requested_route or "(default)",
            (r.error or "")[:80],
            *([_per_shape(r)] if shaped else []),
        ])
    return meta, rows


def _process_sd(store: object, records: list) -> float | None:
    """The default route's process-to-process log spread in this study (``None`` below 3)."""
    from gptuner_core.measurement.process_spread import default_process_medians
    from gptuner_core.measurement.process_spread import process_sd

    default = next((r for r in records if r.number == 0), None)
    medians = default_process_medians(
        default.latency.median_ms if default is not None and default.latency else None,
        [e.payload for e in store.events("baseline")],  # type: ignore[attr-defined]
        [e.payload for e in store.events("revalidation")])  # type: ignore[attr-defined]
    return process_sd(medians)


def _across(r: object, sd: float | None) -> str:
    """The screening speed-up's 95% interval with process-to-process variation included."""
    from gptuner_core.measurement.process_spread import widened_interval

    if sd is None or not r.speedup or r.number == 0:  # type: ignore[attr-defined]
        return ""
    lo, hi = widened_interval(r.speedup, r.speedup_ci, sd)  # type: ignore[attr-defined]
    return f"[{lo:.3f}, {hi:.3f}]"


def _verdict_marks(winner: dict | None) -> dict[int, str]:
    """What the verdict says of the routes it names: the winner, or the kept default and the
    leading contender it did not find faster."""
    if not winner:
        return {}
    from gptuner_core.records import Winner

    w = Winner.from_json(winner)
    if w.significant:
        return {w.number: f"winner {w.speedup:.3f}x"}
    marks = {w.number: "kept (default)" if w.number == 0 else "screening pick"}
    if w.best is not None and w.best != w.number and not w.screening:
        marks[w.best] = "not shown faster"
    return marks


def _per_shape(r: object) -> str:
    """``x:1x256 1.234x, x:64x256 0.987x`` (screening speed-up at each measured shape)."""
    shapes = r.extra.get("shapes") or []  # type: ignore[attr-defined]
    return ", ".join(f"{s['label']} {s['speedup']:.3f}x" if s.get("speedup") else s["label"] for s in shapes)


def verdict_lines(winner: dict | None) -> list[str]:
    """The study's verdict first: its headline and its plain sentences (``[]`` before one)."""
    if not winner:
        return []
    from gptuner_core.records import Winner

    w = Winner.from_json(winner)
    return [w.headline(), w.sentence()]


def print_ranking(study: str | Path, limit: int | None = None, *, verdict: bool = True) -> None:
    """The verdict (unless the caller printed it), then the screening table, labelled as such,
    its verdict column marking the route the verdict recommends."""
    meta, rows = ranking_rows(study)
    if verdict:
        lines = verdict_lines(meta.get("winner"))
        if lines:
            print(f"verdict: {lines[0]}")
            print(lines[1])
    objective = meta.get("objective")
    print(f"{SCREENING}:")
    header = ["rank", "#", "verdict", "state", "median ms", "screening speedup", "screening spread",
              "screening 95% across processes", "accuracy", "route", "error"]
    if objective:  # several shapes: the speed-up is the objective's, the latency the first shape's
        header[4:6] = ["median ms (1st shape)", f"screening speedup ({objective})"]
        header.append("per shape")
    shown = rows if limit is None else rows[:limit]
    widths = [max(len(h), *(len(r[i]) for r in shown)) if shown else len(h) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for r in shown:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if meta.get("process_sd") is None:
        print("(screening spread: within one process; no 95% interval across processes until the "
              "default route has been measured in 3 processes: drift sentinels or re-validation)")
    if limit is not None and len(rows) > limit:
        print(f"... {len(rows) - limit} more (gptuner show {study})")


def disk_line(study: str | Path, recorded: object, config: dict) -> str:
    """The study folder's disk use now (and the peak the tuner saw), with --keep-artifacts."""
    from gptuner_core.engine.files.artifacts import disk_use
    from gptuner_core.engine.files.artifacts import human_bytes
    from gptuner_core.engine.files.artifacts import keep_mode

    line = disk_use(study).summary()
    peak = recorded.get("peak") if isinstance(recorded, dict) else None
    if peak:
        line += f"; peak {human_bytes(peak)}"
    return f"{line}; --keep-artifacts {keep_mode(config.get('keep_artifacts', 'all'))}"


class ShowCommand(Command):
    name = "show"
    help = "ranked table of a study's candidates"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="DIR")
        parser.add_argument("--limit", type=at_least(0), help="list at most N candidates")
        parser.add_argument("--json", action="store_true", help="print the records as JSON lines")

    def run(self, args: argparse.Namespace) -> int:
        if args.json:
            from gptuner_core.storage import open_store

            with open_store(args.study, readonly=True) as store:
                for rec in store.candidates():
                    print(json.dumps(rec.to_json()))
            return 0
        meta, _ = ranking_rows(args.study)
        cfg = meta["config"]
        lines = verdict_lines(meta.get("winner"))
        for line in lines:  # the verdict first, then everything else
            print(line)
        print(f"study {args.study}: {meta['status']}  backend={cfg.get('backend')}  "
              f"search={cfg.get('search')}  model={cfg.get('model')}")
        if meta["message"] and (not lines or lines[0] not in meta["message"]):
            print(meta["message"])
        elif meta["message"]:  # the status message without the verdict said above
            rest = meta["message"].replace(lines[0], "").strip("; ")
            if rest:
                print(rest)
        print_ranking(args.study, limit=args.limit, verdict=False)
        print(disk_line(args.study, meta.get("disk_use"), meta["config"]))
        health = meta.get("health")
        if isinstance(health, dict):
            for w in health.get("warnings", []):
                print(f"measurement health: {w}")
        return 0


class StopCommand(Command):
    name = "stop"
    help = "ask a running study to stop after its current candidate"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="DIR")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.engine.process.launch import request_stop

        request_stop(Path(args.study))
        print(f"stop requested for {args.study}")
        return 0
