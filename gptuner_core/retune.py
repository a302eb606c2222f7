"""Re-tuning after a change (model, input shapes, device, software, knob database).

:func:`retune` first re-validates the old study's winning route against the *new* default route
on the new model (both built in fresh processes, the old route through the accuracy gate, then
interleaved sequential re-validation: does the old win still hold?), in ``NEW/lineage/``; then
runs a new study in ``NEW`` warm-started from the old study (``StudyConfig.warm_start``) under
the time budget, through :class:`~gptuner_core.engine.loop.tuner.Tuner`; and records the lineage in
the new study's ``lineage`` meta: ``{"from": OLD, "old_winner_holds": bool, ...}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ConfigError
from gptuner_core.errors import StoreError


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Sequence

    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.loop.tuner import TuneSummary


@dataclass(frozen=True, slots=True, kw_only=True)
class HoldCheck:
    """Whether the old winner's route still beats the new default route."""

    route: str
    holds: bool
    message: str
    speedup: float | None = None
    ci: tuple[float, float] | None = None
    rounds: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"route": self.route, "holds": self.holds, "message": self.message,
                "speedup": self.speedup, "ci": list(self.ci) if self.ci else None, "rounds": self.rounds}


@dataclass(frozen=True, slots=True, kw_only=True)
class RetuneResult:
    old: str
    new: str
    changes: tuple[tuple[str, str, str], ...]
    check: HoldCheck
    summary: TuneSummary
    lineage: dict[str, Any] = field(default_factory=dict)


def _old_route(old: Path) -> tuple[dict[str, Any], dict[str, Any], str | None, str]:
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.storage import open_store

    if not StudyWorkspace(old).has_study():
        msg = f"'{old}' holds no study to re-tune (expected {old / 'study.sqlite'})"
        raise StoreError(msg)
    with open_store(old, readonly=True) as store:
        config, fingerprint, winner = store.config(), store.fingerprint(), store.winner()
        number = None
        if winner is not None and winner.significant:
            number, why = winner.number, f"old winner #{winner.number}"
        elif winner is not None and winner.best is not None:
            number, why = winner.best, f"the old study had no significant winner; its best contender #{winner.best}"
        else:
            why = "the old study has no route besides the default"
        rec = store.candidate(number) if number is not None else None
    return config, fingerprint, (rec.requested_route if rec else None), why


def _check(cfg: StudyConfig, route: str | None, why: str, workdir: Path, specs: list, db: Any,
           max_rounds: int) -> HoldCheck:
    """Build the new default and the old route on the new model in fresh processes, gate the
    old route's accuracy, re-validate it against the new default in interleaved rounds."""
    from gptuner_core.engine.evaluate.evaluator import make_evaluator
    from gptuner_core.engine.evaluate.protocol import StudyContext
    from gptuner_core.engine.evaluate.rounds import round_samples
    from gptuner_core.engine.files.inputs import StudyInputs
    from gptuner_core.engine.files.inputs import load_inputs
    from gptuner_core.engine.files.inputs import store_inputs
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.expressions import Expression
    from gptuner_core.measurement import SequentialPlan
    from gptuner_core.measurement import revalidate_sequential
    from gptuner_core.records import CandidateState
    from gptuner_core.routes import Route
    from gptuner_core.strategies import Proposal

    if route is None:
        return HoldCheck(route="", holds=False, message=f"nothing to re-validate: {why}")
    ws = StudyWorkspace(workdir)
    ws.root.mkdir(parents=True, exist_ok=True)
    ds = load_inputs(cfg, specs)
    sha = store_inputs(ws, ds)
    inputs = StudyInputs(
        inputs_path=ws.inputs, calibration_path=ws.calibration,
        labels_path=ws.labels if ws.labels.exists() else None, labels=None, sha256=sha,
        batch_axes=dict(getattr(ds, "batch_axes", {}) or {}),
    )
    ev = make_evaluator(StudyContext(config=cfg, workspace=ws, inputs=inputs))  # replay: the recording
    default_route = str(Expression.parse(cfg.expression, db).baseline()) if cfg.expression else ""
    noop: Callable[[str], None] = lambda _phase: None  # noqa: E731
    base = ev.evaluate(Proposal(route=Route.parse(default_route)), 0, [], {}, noop)
    if not base.eligible:
        msg = f"the new default route failed on the new model ({base.state.value}: {base.error}); see {ws.candidate_dir(0)}"
        raise ConfigError(msg)
    old = ev.evaluate(Proposal(route=Route.parse(route)), 1, [base], {}, noop)
    if old.state is not CandidateState.COMPLETE:
        return HoldCheck(route=route, holds=False,
                         message=f"{why} ({route}) no longer works on the new model: {old.state.value}: {old.error}")
    records = {0: base, 1: old}

    def measure(number: int, round_index: int) -> list[float]:
        return round_samples(ev, records[number], f"revalidation/r{round_index}_{number:05d}",
                             "the new default" if number == 0 else "the old route")

    plan = SequentialPlan(min_effect=cfg.min_effect, min_rounds=min(4, max_rounds), max_rounds=max_rounds)
    res = revalidate_sequential([1], 0, measure, plan, seed=cfg.seed)
    est = res.contenders[0].estimate
    holds = res.verdict.value == "winner"
    text = {"winner": "still holds", "not_faster": "no longer holds"}.get(res.verdict.value, "is undecided (counted as not holding)")
    return HoldCheck(
        route=route, holds=holds, message=f"{why} ({route}) {text} against the new default: {res.message}",
        speedup=est.point if est else None,
        ci=(est.low, est.high) if est and est.low is not None and est.high is not None else None,
        rounds=res.rounds,
    )


def retune(
    old_study: str | Path, new_study: str | Path, model: str, *, dataset: str | None = None,
    time_budget_s: float | None = None, max_candidates: int | None = None,
    measurement: dict[str, Any] | None = None, check_rounds: int = 8,
    progress: Callable[[Any], None] | None = None, on_check: Callable[[HoldCheck], None] | None = None,
    warm_start: Sequence[str] = (),
) -> RetuneResult:
    """Re-validate the old win on ``model``, then tune ``new_study`` warm-started from the old
    study and from ``warm_start`` (more studies or recordings of the same knobs: other GPUs)."""
    from gptuner_core import fingerprint as fp
    from gptuner_core.backends import load_backend
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.engine.loop.tuner import Tuner
    from gptuner_core.storage import open_store

    old, new = Path(old_study).absolute(), Path(new_study).absolute()
    if StudyWorkspace(new).has_study():
        msg = f"--study '{new}' already holds a study (expected a new folder for the re-tuned study)"
        raise ConfigError(msg)
    old_config, old_fp, route, why = _old_route(old)
    cfg = StudyConfig.from_json(StudyConfig.settings_of(old_config))
    changes: dict[str, Any] = {
        "model": str(Path(model).resolve()), "output": None,
        "warm_start": (str(old), *(str(Path(w).resolve()) for w in warm_start)),
        "time_budget_s": time_budget_s if time_budget_s is not None else cfg.time_budget_s,
        "max_candidates": max_candidates if max_candidates is not None else cfg.max_candidates,
        "measurement": {**cfg.measurement, **(measurement or {})},
    }
    if dataset is not None:
        changes["dataset"] = str(Path(dataset).resolve())
    if cfg.backend == "replay":  # the new model is the recording to replay, not the old one's option
        changes["backend_options"] = {k: v for k, v in cfg.backend_options.items() if k != "recording"}
    if not cfg.accuracy_settings().gated:  # an old study made before a gate was required keeps
        changes["no_gate"] = True          # its settings, now as an explicit no-gate (warned)
    cfg = cfg.replace(**changes)
    backend = load_backend(cfg.backend, cfg.backend_options)
    specs = backend.input_specs(Path(cfg.model))
    db = backend.describe(Path(cfg.model))
    from gptuner_core.config_checks import checked_warm_start
    from gptuner_core.expressions import Expression

    checked_warm_start(cfg, Expression.parse(cfg.expression, db), db)  # before anything is written
    current = fp.compute(model=cfg.model, backend_name=cfg.backend, backend=backend, db=db, specs=specs,
                         measured_shapes=cfg.measure_shapes)
    diffs = tuple((k, str(a), str(b)) for k, a, b in fp.differences(old_fp, current))
    tuner = Tuner(cfg, new, progress=progress)
    tuner.check_new()  # the whole new study's plan (its dataset...) before NEW/lineage is written
    check = _check(cfg, route, why, new / "lineage", specs, db, check_rounds)
    if on_check is not None:
        on_check(check)
    lineage = {"from": str(old), "old_winner_holds": check.holds, "check": check.to_json(),
               "changes": [list(d) for d in diffs]}
    try:
        summary = tuner.run()
    finally:  # a stopped or failed search keeps its lineage (the study exists once created)
        if StudyWorkspace(new).has_study():
            with open_store(new) as store:
                store.set_meta("lineage", lineage)
                store.add_event("lineage", lineage)
    return RetuneResult(old=str(old), new=str(new), changes=diffs, check=check, summary=summary, lineage=lineage)
