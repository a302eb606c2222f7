"""Is A faster than B? Sequential interleaved rounds for exactly two candidates of a study.

Each round measures both stored artifacts in fresh processes (the study's evaluator), in a
random order; the result (a :class:`~gptuner_core.measurement.SequentialResult`) is stored as a
``pairwise`` event so Compare shows it later.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.engine.artifacts import needs_rebuild
from gptuner_core.errors import BackendError
from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from gptuner_core.measurement import SequentialResult


def compare_candidates(
    study_dir: str | Path, a: int, b: int, *, max_rounds: int | None = None
) -> SequentialResult:
    """Re-measure candidates ``a`` (the reference) and ``b`` interleaved until decided."""
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.evaluator import IsolatedEvaluator
    from gptuner_core.engine.evaluator import StudyContext
    from gptuner_core.engine.inputs import open_inputs
    from gptuner_core.engine.workspace import StudyWorkspace
    from gptuner_core.measurement import SequentialPlan
    from gptuner_core.measurement import revalidate_sequential
    from gptuner_core.storage import open_store

    ws = StudyWorkspace(study_dir)
    if a == b:
        msg = f"compare two different candidates (got #{a} twice)"
        raise ConfigError(msg)
    with open_store(ws.root, readonly=True) as store:
        cfg = StudyConfig.from_json(store.config())
        recs = {n: store.candidate(n) for n in (a, b)}
        sha, axes = store.get_meta("inputs_sha256"), store.get_meta("batch_axes")
    for n, rec in recs.items():
        if rec is None:
            msg = f"candidate #{n} is not in the study '{ws.root}'"
            raise ConfigError(msg)
        gone = rec.artifact_path and not Path(rec.artifact_path).exists()
        if not rec.eligible or not rec.artifact_path or (gone and not needs_rebuild(rec.artifact_path, {})):
            msg = f"candidate #{n} has no measurable artifact ({rec.state.value}; artifact {rec.artifact_path or 'none'})"
            raise ConfigError(msg)
    from gptuner_core.backends import load_backend

    specs = load_backend(cfg.backend, cfg.backend_options).input_specs(Path(cfg.model))
    inputs = open_inputs(ws, cfg, specs, sha, axes)
    evaluator = IsolatedEvaluator(StudyContext(config=cfg, workspace=ws, inputs=inputs))

    def measure_fresh(number: int, round_index: int) -> list[float]:
        purpose = f"pairwise/{a:05d}_{b:05d}/r{round_index}_{number:05d}"
        res = evaluator.remeasure(recs[number], purpose)  # type: ignore[arg-type]
        if not res.ok or not res.samples_ms:
            msg = f"re-measurement of candidate #{number} failed ({res.error or 'no samples'})"
            raise BackendError(msg)
        return list(res.samples_ms)

    rounds = max_rounds or max(cfg.revalidate_rounds, 2)
    plan = SequentialPlan(min_effect=cfg.min_effect, min_rounds=min(4, rounds), max_rounds=rounds)
    result = revalidate_sequential([b], a, measure_fresh, plan, seed=cfg.seed)
    with open_store(ws.root) as store:
        store.add_event("pairwise", {"reference": a, "candidate": b, **result.to_json()})
    return result
