"""Measuring a candidate against a bundle's artifact with the study's own machinery.

Two :class:`~gptuner_core.engine.evaluate.evaluator.IsolatedEvaluator` views over one gate work folder:
the candidate's (its model, the bundle's inputs and golden outputs: ``evaluate`` builds it in a
fresh process and applies the study's accuracy gate) and the baseline's (the bundled artifact,
re-measured in fresh processes like any re-validation).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.engine.evaluate.rounds import checked_samples
from gptuner_core.engine.evaluate.rounds import measure_round
from gptuner_core.errors import BundleError


if TYPE_CHECKING:
    from gptuner_core.bundle.manifest import Bundle
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.evaluate.evaluator import IsolatedEvaluator
    from gptuner_core.engine.files.inputs import StudyInputs
    from gptuner_core.records import CandidateRecord

BASELINE = 1  # the bundle's artifact (the sequential re-validation's "contender")
CANDIDATE = 0  # the change under test (its "default": ratios are candidate / baseline)


@dataclass(frozen=True, slots=True, kw_only=True)
class GatePair:
    """The candidate's and the baseline's evaluators and records, ready to re-measure."""

    candidate: CandidateRecord
    baseline: CandidateRecord
    candidate_eval: IsolatedEvaluator
    baseline_eval: IsolatedEvaluator


def _evaluator(config: StudyConfig, inputs: StudyInputs, workdir: Path, golden_from: Path,
               roots: tuple[Path, ...] = ()) -> IsolatedEvaluator:
    """An evaluator over ``workdir`` whose golden outputs (and reference metric) are those in
    ``golden_from``; ``roots``: the folders (the verified bundle, a given artifact's) whose
    artifacts it may measure besides its own."""
    from gptuner_core.engine.evaluate.evaluator import IsolatedEvaluator
    from gptuner_core.engine.evaluate.protocol import StudyContext
    from gptuner_core.engine.files.workspace import StudyWorkspace

    ws = StudyWorkspace(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("golden.npz", "reference.json"):
        if (golden_from / name).is_file() and not (workdir / name).exists():
            shutil.copy2(golden_from / name, workdir / name)
    return IsolatedEvaluator(StudyContext(config=config, workspace=ws, inputs=inputs), artifact_roots=roots)


def bundle_inputs(bundle: Bundle) -> StudyInputs:
    from gptuner_core.engine.files.inputs import StudyInputs

    return StudyInputs(
        inputs_path=bundle.path("inputs.npz"),
        calibration_path=bundle.path("calibration.npz") if bundle.has("calibration.npz") else None,
        labels_path=bundle.path("labels.npy") if bundle.has("labels.npy") else None,
        labels=None, sha256="", batch_axes=dict(bundle.batch_axes),
    )


def dataset_inputs(bundle: Bundle, config: StudyConfig, dataset: Path, workdir: Path, specs: list) -> StudyInputs:
    """``--dataset``: its inputs (validated like a study's), stored in ``workdir``; builds keep
    the bundle's calibration rows so the baseline rebuilds as it was built."""
    from gptuner_core.engine.files.inputs import StudyInputs
    from gptuner_core.engine.files.inputs import load_inputs
    from gptuner_core.engine.files.inputs import store_inputs
    from gptuner_core.engine.files.workspace import StudyWorkspace

    ws = StudyWorkspace(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    ds = load_inputs(config.replace(dataset=str(dataset)), specs)
    sha = store_inputs(ws, ds)
    return StudyInputs(
        inputs_path=ws.inputs,
        calibration_path=bundle.path("calibration.npz") if bundle.has("calibration.npz") else ws.calibration,
        labels_path=ws.labels if ws.labels.exists() else None, labels=None, sha256=sha,
        batch_axes=dict(getattr(ds, "batch_axes", {}) or {}),
    )


def _golden_on(bundle: Bundle, config: StudyConfig, inputs: StudyInputs, workdir: Path) -> Path:
    """Golden outputs on other inputs: the bundle's route rebuilt on the bundled model in a
    fresh process (candidate 0 of a scratch workspace defines them, as in a study)."""
    from gptuner_core.routes import Route
    from gptuner_core.strategies import Proposal

    if bundle.model is None:
        msg = (
            f"--dataset needs the baseline's model to produce golden outputs on the new inputs, "
            f"but bundle '{bundle.root}' holds none (the study's model was gone when it was made)"
        )
        raise BundleError(msg)
    ev = _evaluator(config.replace(model=str(bundle.model)), inputs, workdir, workdir)
    rec = ev.evaluate(Proposal(route=Route.parse(bundle.route)), 0, [], {}, lambda _phase: None)
    if not rec.eligible:
        msg = f"the baseline route could not be rebuilt for golden outputs on --dataset ({rec.state.value}: {rec.error})"
        raise BundleError(msg)
    return workdir


def baseline_record(bundle: Bundle) -> CandidateRecord:
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState

    return CandidateRecord(
        number=BASELINE, requested_route=bundle.route, state=CandidateState.COMPLETE,
        effective_route=bundle.effective_route, artifact_path=str(bundle.artifact),
        extra={"info": dict(bundle.info)},
    )


def artifact_info(backend: str, artifact: Path) -> dict:
    """The build info a backend needs to load a given artifact (``--artifact``).

    TensorRT loads the engine file itself (no info); ONNX Runtime loads the model and session
    options recorded with the artifact (``model.optimized.onnx`` + ``session.json``, as its
    build writes them), so those are read back here.
    """
    import json

    if backend != "onnxruntime":
        return {}
    root = artifact if artifact.is_dir() else artifact.parent
    if (root / "ort").is_dir():
        root = root / "ort"
    session, model = root / "session.json", root / "model.optimized.onnx"
    if not (session.is_file() and model.is_file()):
        msg = (
            f"--artifact '{artifact}' is not an ONNX Runtime artifact (expected a folder holding "
            "session.json and model.optimized.onnx, as a study's candidates/N/artifact/ does)"
        )
        raise BundleError(msg)
    try:
        values = json.loads(session.read_text(encoding="utf-8"))["session"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        msg = f"--artifact '{artifact}': '{session}' is unreadable ({exc}); expected the session.json a build writes"
        raise BundleError(msg) from None
    return {"transformed_model": str(model), "session_values": dict(values)}


def prepare(
    bundle: Bundle, config: StudyConfig, workdir: Path, *, route: str | None, artifact: str | None,
    dataset: Path | None = None, specs: list | None = None,
) -> GatePair:
    """Build the candidate (route, on ``config.model``) in a fresh process and gate its
    accuracy against the bundle's golden outputs; or take a given ``artifact`` as it is."""
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState
    from gptuner_core.routes import Route
    from gptuner_core.strategies import Proposal

    workdir.mkdir(parents=True, exist_ok=True)
    if dataset is not None:
        inputs = dataset_inputs(bundle, config, dataset, workdir / "inputs", list(specs or []))
        golden = _golden_on(bundle, config, inputs, workdir / "reference")
    else:
        inputs, golden = bundle_inputs(bundle), bundle.root
    roots = (bundle.root, *((Path(artifact).absolute().parent,) if artifact is not None else ()))
    cand_eval = _evaluator(config, inputs, workdir / "candidate", golden, roots)
    base_cfg = config.replace(model=str(bundle.model or bundle.config.get("model") or config.model))
    base_eval = _evaluator(base_cfg, inputs, workdir / "baseline", golden, roots)
    if artifact is not None:
        rec = CandidateRecord(
            number=CANDIDATE, requested_route=route or bundle.route, state=CandidateState.COMPLETE,
            effective_route=route or bundle.effective_route, artifact_path=str(Path(artifact).absolute()),
            extra={"info": artifact_info(bundle.backend, Path(artifact).absolute())},
        )
    else:
        proposal = Proposal(route=Route.parse(route if route is not None else bundle.route))
        rec = cand_eval.evaluate(proposal, CANDIDATE + 1, [], {}, lambda _phase: None)
        rec = rec.replace(number=CANDIDATE)
    return GatePair(candidate=rec, baseline=baseline_record(bundle),
                    candidate_eval=cand_eval, baseline_eval=base_eval)


def measure_fresh(pair: GatePair, number: int, round_index: int, busy: list[bool] | None = None) -> list[float]:
    """One measurement of the candidate or the baseline in a fresh process (``run_isolated``
    with the ``remeasure`` child target, through the evaluator); ``busy`` collects whether other
    programs ran beside it (its telemetry's ``busy``)."""
    rec, ev = (pair.candidate, pair.candidate_eval) if number == CANDIDATE else (pair.baseline, pair.baseline_eval)
    who = "candidate" if number == CANDIDATE else "baseline"
    purpose = f"rounds/r{round_index}_{who}"
    res = measure_round(ev, rec, purpose)
    if busy is not None and res.ok:
        busy.append(bool(res.telemetry.get("busy")))
    return checked_samples(res, rec, purpose, f"the {who}", see=ev.ctx.workspace.root / purpose)
