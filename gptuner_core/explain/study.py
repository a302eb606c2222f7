"""Explain a study's winner (or any candidate) against the default route.

:func:`explain` reads the store once and assembles an :class:`Explanation`: the knobs the
candidate changed, their main effects with CIs, the importance ranking, interactions, failure
triage and, when both candidates carry a ``profile.json``, the aligned layer diff.
:func:`profile_candidate` captures a missing profile from a stored artifact (for ``gptuner diff
--capture`` and ``explain --capture``; the tuner will capture in the candidate's child itself).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ProfileError
from gptuner_core.errors import StoreError


if TYPE_CHECKING:
    from gptuner_core.explain.effects import KnobEffect
    from gptuner_core.explain.importance import Interaction
    from gptuner_core.explain.importance import KnobImportance
    from gptuner_core.explain.triage import FailureCluster
    from gptuner_core.profiles import LayerDiff
    from gptuner_core.records import CandidateRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyFacts:
    """What the explain views need from a store, read once."""

    records: tuple[CandidateRecord, ...]
    defaults: dict[str, str]
    expression: str
    winner: int | None
    config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """One candidate explained against the default route (#0)."""

    number: int
    baseline: int
    record: CandidateRecord
    baseline_record: CandidateRecord
    changed: tuple[tuple[str, str, str], ...]  # (knob, default value, candidate value)
    effects: tuple[KnobEffect, ...]  # main effects of the changed values
    all_effects: tuple[KnobEffect, ...]
    importance: tuple[KnobImportance, ...]
    interactions: tuple[Interaction, ...]
    failures: tuple[FailureCluster, ...]
    layer_diff: LayerDiff | None
    notes: tuple[str, ...] = ()


def read_study(study_dir: str | Path) -> StudyFacts:
    """Records (with samples), knob defaults, expression and winner of a study."""
    from gptuner_core.storage import open_store

    path = Path(study_dir)
    if not (path / "study.sqlite").is_file():
        msg = f"'{path}' is not a study folder (expected {path / 'study.sqlite'})"
        raise StoreError(msg)
    with open_store(path, readonly=True) as store:
        records = tuple(store.candidates(with_samples=True))
        config = dict(store.config())
        db = store.get_meta("knob_db")
        winner = (store.get_meta("winner") or {}).get("number")
    defaults: dict[str, str] = {}
    if db:
        from gptuner_core.knobs import KnobDatabase

        defaults = {k.name: k.default for k in KnobDatabase.from_json(db)}
    return StudyFacts(records=records, defaults=defaults, expression=str(config.get("expression") or ""),
                      winner=winner, config=config)


def _record(facts: StudyFacts, number: int) -> CandidateRecord:
    for r in facts.records:
        if r.number == number:
            return r
    known = [r.number for r in facts.records]
    shown = f"{known[0]}..{known[-1]}" if known else "none"
    msg = f"candidate #{number} is not in this study (candidates: {shown})"
    raise StoreError(msg)


def profiled_number(record: CandidateRecord) -> int:
    """Whose profile describes this candidate: a duplicate runs its original's artifact."""
    return record.duplicate_of if record.duplicate_of is not None else record.number


def no_layers_reason(study_dir: str | Path, record: CandidateRecord, config: dict) -> str | None:
    """Why ``record`` has no per-layer profile and cannot get one (``None``: it has one, or its
    artifact can be profiled): a candidate replayed from a recording was never built."""
    from gptuner_core.profiles import has_profile

    n = profiled_number(record)
    if record.artifact_path or record.duplicate_of is not None or has_profile(study_dir, n):
        return None
    if config.get("backend") == "replay":
        return (f"candidate #{record.number} was replayed from a recording (backend 'replay'), "
                "not built: there is no engine whose layers could be profiled")
    return (f"candidate #{record.number} was never built ({record.state.value}), so it has no "
            "layers to compare (expected a built candidate)")


def layer_diff(study_dir: str | Path, a: CandidateRecord, b: CandidateRecord) -> LayerDiff | None:
    """The aligned layer diff of two stored candidates, ``None`` if either lacks a profile."""
    from gptuner_core.profiles import diff_profiles
    from gptuner_core.profiles import load_profile

    pa, pb = load_profile(study_dir, profiled_number(a)), load_profile(study_dir, profiled_number(b))
    if pa is None or pb is None:
        return None
    return diff_profiles(pa, pb, label_a=f"#{a.number}", label_b=f"#{b.number}",
                         latency_a=a.latency, latency_b=b.latency)


def explain(study_dir: str | Path, number: int | None = None, *, facts: StudyFacts | None = None) -> Explanation:
    """Explain candidate ``number`` (default: the study's winner) against the default route."""
    from gptuner_core.explain.effects import main_effects
    from gptuner_core.explain.effects import route_values
    from gptuner_core.explain.importance import importance
    from gptuner_core.explain.importance import interactions
    from gptuner_core.explain.triage import triage

    facts = facts or read_study(study_dir)
    if not facts.records:
        msg = f"study '{study_dir}' has no candidates yet"
        raise StoreError(msg)
    notes = []
    if number is None:
        number = facts.winner
        if number is None:
            msg = f"study '{study_dir}' has no winner yet (give a candidate number: gptuner explain STUDY N)"
            raise StoreError(msg)
    rec, base = _record(facts, number), _record(facts, facts.records[0].number)
    cand, dflt = route_values(rec.requested_route), route_values(base.requested_route)
    changed = tuple(
        (k, dflt.get(k, facts.defaults.get(k, "")), v) for k, v in cand.items()
        if v != dflt.get(k, facts.defaults.get(k, ""))
    )
    effects = tuple(main_effects(facts.records, facts.defaults))
    wanted = {(k, v) for k, _, v in changed}
    diff = layer_diff(study_dir, base, rec) if rec.number != base.number else None
    if diff is None and rec.number != base.number:
        notes.append(f"no layer diff: #{base.number} or #{rec.number} has no profile.json "
                     f"(run: gptuner diff {study_dir} {base.number} {rec.number} --capture)")
    return Explanation(
        number=rec.number, baseline=base.number, record=rec, baseline_record=base, changed=changed,
        effects=tuple(e for e in effects if (e.knob, e.value) in wanted), all_effects=effects,
        importance=tuple(importance(facts.records, facts.defaults)),
        interactions=tuple(interactions(facts.records, facts.defaults)),
        failures=tuple(triage(facts.records, facts.defaults, facts.expression)),
        layer_diff=diff, notes=tuple(notes),
    )


def profile_candidate(study_dir: str | Path, number: int, *, runs: int = 30) -> Path:
    """Capture ``profile.json`` for a stored candidate from its artifact (outside the tuner).

    Uses the candidate's ``job.json`` (backend, options, model, inputs, batch size) and the build
    info in the store. Raises :class:`ProfileError` when the artifact is gone or unusable.
    """
    import numpy as np

    from gptuner_core.backends import BuildResult
    from gptuner_core.backends import load_backend
    from gptuner_core.profiles import capture_profile
    from gptuner_core.storage import open_store

    folder = Path(study_dir) / "candidates" / f"{int(number):05d}"
    with open_store(study_dir, readonly=True) as store:
        rec = store.candidate(number)
        config = store.config()
    if rec is None:
        msg = f"candidate #{number} is not in study '{study_dir}'"
        raise ProfileError(msg)
    if rec.duplicate_of is not None:
        return profile_candidate(study_dir, rec.duplicate_of, runs=runs)
    from gptuner_core.engine.files.artifacts import needs_rebuild
    from gptuner_core.storage.paths import confined

    if rec.artifact_path:
        confined(rec.artifact_path, study_dir, what=f"candidate #{number}'s artifact")  # never followed out
    pruned = rec.artifact_path and needs_rebuild(rec.artifact_path, {})  # --keep-artifacts: rebuilt
    if not rec.artifact_path or not (Path(rec.artifact_path).exists() or pruned):
        msg = (f"candidate #{number} has no artifact to profile (state {rec.state.value}, "
               f"artifact {rec.artifact_path or 'none'}; expected a built candidate)")
        raise ProfileError(msg)
    from gptuner_core.storage.paths import confined

    try:
        job = json.loads(confined(folder / "job.json", study_dir, what="job.json").read_text())
    except (OSError, json.JSONDecodeError) as exc:
        msg = f"candidate #{number}: cannot read {folder / 'job.json'} ({exc})"
        raise ProfileError(msg) from None
    if job.get("backend") != config.get("backend"):  # a job.json naming other code: not imported
        msg = (f"candidate #{number}: {folder / 'job.json'} names backend {job.get('backend')!r}, "
               f"the study {config.get('backend')!r} (expected the study's own)")
        raise ProfileError(msg)
    backend = load_backend(job["backend"], job.get("backend_options", {}))
    build = BuildResult(artifact=Path(rec.artifact_path), effective_route=rec.effective_route or "",
                        info=dict(rec.extra.get("info") or {}))
    if pruned or needs_rebuild(rec.artifact_path, build.info):
        from gptuner_core.engine.process.child import ensure_built
        from gptuner_core.records import ChildJob

        child_job = ChildJob.from_json(job).replace(
            artifact=rec.artifact_path, effective_route=rec.effective_route, info=build.info)
        build = ensure_built(child_job, backend)
    with np.load(job["inputs"], allow_pickle=False) as data:
        feeds = {k: data[k][: int(job["batch_size"])] for k in data.files}
    with backend.load(build) as runner:
        return capture_profile(job["backend"], build, runner, feeds, folder, model=job.get("model"), runs=runs)
