"""What a study report shows, computed from the store (figures come from ``gptuner_core.views``)."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import StoreError


if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

#: candidate-table columns, in order
TABLE = ("number", "state", "route", "median_ms", "speedup", "speedup_ci_low", "speedup_ci_high",
         "max_loss", "cv", "n_samples", "error")


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyReport:
    """Everything the HTML report renders; ``figures`` are ``(key, title, figure)``."""

    study: str
    status: str
    verdict: dict[str, Any] | None
    headline: str
    figures: tuple[tuple[str, str, go.Figure], ...]
    health: dict[str, Any]
    table: pd.DataFrame
    commands: dict[str, str]
    lineage: dict[str, Any] | None = None
    config: dict[str, Any] = field(default_factory=dict)


def _headline(winner: Any, records: dict[int, Any]) -> str:
    if winner is None:
        return "no verdict yet (the study has not finished re-validation)"
    rec = records.get(winner.number)
    route = (rec.effective_route or rec.requested_route) if rec else "?"
    return f"{winner.headline()} — route #{winner.number} ({route or 'default'}). {winner.sentence()}"


def _curve_figures(records: list[Any], cfg: dict[str, Any], path: Path) -> list[tuple[str, str, go.Figure]]:
    """The search curve against builds and build seconds (random search's band where recorded)."""
    from gptuner_core.views.curves import search_curve_figure
    from gptuner_core.views.curves import study_curves

    curve, rand, fraction = study_curves(records, cfg, path)
    band = " with random search's expectation and band" if rand is not None else ""
    return [(f"search_curve_{x}", f"Search curve against {label}{band}",
             search_curve_figure(curve, rand, against=x, fraction=fraction, name=path.name))
            for x, label in (("builds", "builds"), ("seconds", "build seconds"))]


def study_report(study_dir: str | Path) -> StudyReport:
    """Read ``study_dir`` once and build the report's content."""
    from gptuner_core.explain import main_effects
    from gptuner_core.explain import read_study
    from gptuner_core.measurement import health_summary
    from gptuner_core.storage import open_store
    from gptuner_core.views import _frames as frames
    from gptuner_core.views import figures as F
    from gptuner_core.views.explain import effects_figure
    from gptuner_core.views.health import drift_figure
    from gptuner_core.views.health import drift_frame
    from gptuner_core.views.scatter import accuracy_latency_figure
    from gptuner_core.views.trace import repro_commands

    path = Path(study_dir).absolute()
    if not (path / "study.sqlite").is_file():
        msg = f"'{study_dir}' is not a study folder (expected {path / 'study.sqlite'})"
        raise StoreError(msg)
    facts = read_study(path)
    with open_store(path, readonly=True) as store:
        winner = store.winner()
        status = store.status()
        baselines = [e.payload for e in store.events("baseline")]
        health = health_summary(facts.records, store.events("baseline")).to_json()
        lineage = store.get_meta("lineage")
    records = list(facts.records)
    by_number = {r.number: r for r in records}
    cfg = facts.config
    df = frames.candidates_frame(records)
    df = frames.apply_epsilon(df, records, cfg.get("epsilon"), metric=str(cfg.get("metric") or "l2"),
                              task_metric=cfg.get("task_metric"), max_drop=cfg.get("max_task_drop"))
    figs: list[tuple[str, str, go.Figure]] = [
        ("accuracy_latency", "Accuracy × latency",
         accuracy_latency_figure(df, epsilon=cfg.get("epsilon"), metric=str(cfg.get("metric") or "l2"),
                                 winner=winner.number if winner and winner.significant else None)),
    ] if df["max_loss"].notna().any() else []  # an imported space stores no losses: nothing to draw
    figs += [
        ("speedups", "Screening speed-ups vs the default route (one process per route, not the verdict)",
         F.speedup_figure(df)),
        ("history", "Screening best-so-far history", F.history_figure(frames.best_so_far(df))),
        *_curve_figures(records, cfg, path),
        ("knob_effects", "Knob effects (main effects, 95 % CI)",
         effects_figure(main_effects(records, facts.defaults))),
    ]
    shown = winner.number if winner else 0
    samples = {f"#{n} {'(default)' if n == 0 else '(recommended)'}": list(by_number[n].samples_ms)
               for n in sorted({0, shown}) if n in by_number and by_number[n].samples_ms}
    if samples:
        figs.append(("samples", "Raw latency samples", F.overlaid_samples_figure(samples)))
    figs.append(("drift", "Measurement health: default-route drift", drift_figure(drift_frame(records, baselines))))
    commands: dict[str, str] = {"study": f"gptuner tune --config {path / 'study.json'} --study {path}-rebuilt"}
    if shown in by_number:
        commands.update(repro_commands(cfg, by_number[shown], study_dir=str(path)))
    commands["bundle"] = f"gptuner bundle {path} -o {path}-bundle"
    table = df[[c for c in TABLE if c in df.columns]]
    return StudyReport(
        study=str(path), status=status.value if status else "unknown",
        verdict=winner.to_json() if winner else None, headline=_headline(winner, by_number),
        figures=tuple(figs), health=health, table=table, commands=commands,
        lineage=lineage, config=cfg,
    )
