"""``gptuner show`` (ranked table of a study) and ``gptuner stop`` (request a stop)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import at_least


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
    shaped = any(r.extra.get("shapes") for r in records)
    meta["objective"] = next((r.extra.get("shape_objective") for r in records if r.extra.get("shapes")), None)
    eligible = sorted(  # several shapes: by the objective's speed-up, else by median latency
        (r for r in records if r.eligible),
        key=(lambda r: -(r.speedup or 0.0)) if shaped else (lambda r: r.latency.median_ms),  # type: ignore[union-attr]
    )
    others = [r for r in records if not r.eligible]
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
            r.state.value,
            f"{lat.median_ms:.4f}" if lat else "",
            f"{r.speedup:.3f}x" if r.speedup else "",
            ci,
            acc,
            r.requested_route or "(default)",
            (r.error or "")[:80],
            *([_per_shape(r)] if shaped else []),
        ])
    return meta, rows


def _per_shape(r: object) -> str:
    """``x:1x256 1.234x, x:64x256 0.987x`` (screening speed-up at each measured shape)."""
    shapes = r.extra.get("shapes") or []  # type: ignore[attr-defined]
    return ", ".join(f"{s['label']} {s['speedup']:.3f}x" if s.get("speedup") else s["label"] for s in shapes)


def print_ranking(study: str | Path, limit: int | None = None) -> None:
    meta, rows = ranking_rows(study)
    objective = meta.get("objective")
    header = ["rank", "#", "state", "median ms", "screening speedup", "screening 95% CI", "accuracy", "route", "error"]
    if objective:  # several shapes: the speed-up is the objective's, the latency the first shape's
        header[3:5] = ["median ms (1st shape)", f"screening speedup ({objective})"]
        header.append("per shape")
    shown = rows if limit is None else rows[:limit]
    widths = [max(len(h), *(len(r[i]) for r in shown)) if shown else len(h) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for r in shown:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if limit is not None and len(rows) > limit:
        print(f"... {len(rows) - limit} more (gptuner show {study})")
    winner = meta.get("winner")
    if winner:
        from gptuner_core.records import Winner

        w = Winner.from_json(winner)
        print(f"verdict: {w.headline()} ({w.message})")


def disk_line(study: str | Path, recorded: object, config: dict) -> str:
    """The study folder's disk use now (and the peak the tuner saw), with --keep-artifacts."""
    from gptuner_core.engine.artifacts import disk_use
    from gptuner_core.engine.artifacts import human_bytes
    from gptuner_core.engine.artifacts import keep_mode

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
        print(f"study {args.study}: {meta['status']}  backend={cfg.get('backend')}  "
              f"search={cfg.get('search')}  model={cfg.get('model')}")
        if meta["message"]:
            print(meta["message"])
        print_ranking(args.study, limit=args.limit)
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
