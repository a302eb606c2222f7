"""Steps of the tuning loop that are not the loop itself: inputs, gate, speed-up, winner, output."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from gptuner_core.errors import BackendError
from gptuner_core.errors import GptunerError
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState


if TYPE_CHECKING:
    from gptuner_core.backends import TensorSpec
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.tuner import Tuner
    from gptuner_core.storage import StudyStore

CALIBRATION_ROWS = 64
SYNTHETIC_ROWS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyInputs:
    inputs_path: Path
    calibration_path: Path | None
    labels: np.ndarray | None


def load_inputs(cfg: StudyConfig, specs: list[TensorSpec]):  # noqa: ANN201 - Dataset
    """Load and validate the dataset (or synthesize inputs) before anything is written."""
    from gptuner_core.dataset import load_dataset
    from gptuner_core.dataset import synthesize
    from gptuner_core.dataset import validate_batch_size
    from gptuner_core.errors import ConfigError

    validate_batch_size(specs, cfg.batch_size)
    ds = load_dataset(cfg.dataset, specs) if cfg.dataset else synthesize(
        specs, SYNTHETIC_ROWS, seed=cfg.seed
    )
    if cfg.task_metric == "top1" and ds.labels is None:
        msg = (
            "--task-metric top1 needs labels: the dataset must hold a 'labels' array "
            f"(dataset: {cfg.dataset or 'none, inputs are synthesized'})"
        )
        raise ConfigError(msg)
    return ds


def prepare_inputs(cfg: StudyConfig, study_dir: Path, specs: list[TensorSpec], dataset=None) -> StudyInputs:  # noqa: ANN001
    """Write the study's ``inputs.npz``, ``calibration.npz`` and labels once; reuse them as they
    are on ``--continue`` (so a resumed study measures exactly the same inputs)."""
    inputs_path = study_dir / "inputs.npz"
    calib_path = study_dir / "calibration.npz"
    labels_path = study_dir / "labels.npy"
    if not inputs_path.exists():
        ds = dataset if dataset is not None else load_inputs(cfg, specs)
        np.savez(calib_path, **ds.calibration(CALIBRATION_ROWS))
        if ds.labels is not None:
            np.save(labels_path, ds.labels)
        np.savez(inputs_path, **ds.inputs)
    labels = np.load(labels_path, allow_pickle=False) if labels_path.exists() else None
    return StudyInputs(inputs_path=inputs_path, calibration_path=calib_path, labels=labels)


def accuracy_settings(cfg: StudyConfig):  # noqa: ANN201 - AccuracySettings
    from gptuner_core.accuracy import AccuracySettings

    return AccuracySettings(
        metric=cfg.metric, atol=cfg.atol, rtol=cfg.rtol, epsilon=cfg.epsilon,
        task_metric=cfg.task_metric, max_task_drop=cfg.max_task_drop,
    )


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def gate(tuner: Tuner, rec: CandidateRecord, workdir: Path) -> CandidateRecord:
    """Accuracy filters: compare this candidate's outputs with the golden outputs.

    The default route (candidate 0) defines the golden outputs and the reference task metric.
    """
    from gptuner_core.accuracy import evaluate

    outputs = _npz(workdir / "outputs.npz")
    golden_path = tuner.dir / "golden.npz"
    settings = accuracy_settings(tuner.config)
    if rec.number == 0 or not golden_path.exists():
        np.savez(golden_path, **outputs)
        result, _, _ = evaluate(outputs, outputs, tuner.inputs.labels, settings, None)
        if result.task_metric is not None:
            (tuner.dir / "reference.json").write_text(
                json.dumps({"task_metric": result.task_metric}), encoding="utf-8"
            )
        return rec.replace(state=CandidateState.COMPLETE, accuracy=result)
    reference = None
    ref_path = tuner.dir / "reference.json"
    if ref_path.exists():
        reference = json.loads(ref_path.read_text(encoding="utf-8")).get("task_metric")
    result, passed, reason = evaluate(
        outputs, _npz(golden_path), tuner.inputs.labels, settings, reference
    )
    if not tuner.config.keep_artifacts:
        (workdir / "outputs.npz").unlink(missing_ok=True)
    if passed:
        return rec.replace(state=CandidateState.COMPLETE, accuracy=result)
    return rec.replace(state=CandidateState.ACCURACY_FAILED, accuracy=result, error=reason)


def with_speedup(rec: CandidateRecord, history: list[CandidateRecord]) -> CandidateRecord:
    """Speed-up vs the default route (candidate 0) with a bootstrap CI."""
    from gptuner_core.measurement import speedup

    if rec.latency is None:
        return rec
    if rec.number == 0 or not history:
        return rec.replace(speedup=1.0, speedup_ci=(1.0, 1.0))
    default = history[0]
    if default.latency is None:
        return rec
    if default.samples_ms and rec.samples_ms:
        est = speedup(default.samples_ms, rec.samples_ms)
        return rec.replace(speedup=est.point, speedup_ci=(est.low, est.high))
    return rec.replace(speedup=default.latency.median_ms / rec.latency.median_ms)


def revalidate_winner(
    tuner: Tuner, store: StudyStore, history: list[CandidateRecord]
) -> dict[str, Any] | None:
    """Interleaved re-validation of the top-K eligible candidates against the default."""
    from gptuner_core.measurement import revalidate

    cfg = tuner.config
    eligible = sorted(
        (r for r in history if r.eligible and r.number != 0 and r.state is CandidateState.COMPLETE),
        key=lambda r: r.latency.median_ms if r.latency else float("inf"),
    )
    if not history or not history[0].eligible:
        return None
    if not eligible:
        return {
            "number": 0, "speedup": 1.0, "ci": [1.0, 1.0], "significant": False,
            "message": "no eligible route other than the default; keeping the default route",
        }
    top = eligible[: max(cfg.revalidate_top_k, 0)]
    if not top:
        best = eligible[0]
        return {
            "number": best.number, "speedup": best.speedup,
            "ci": list(best.speedup_ci) if best.speedup_ci else None, "significant": None,
            "message": (
                f"best route #{best.number} ({best.speedup:.3f}x) was not re-validated "
                "(--revalidate-top-k 0)"
            ),
        }
    by_number = {r.number: r for r in history}

    def measure_fresh(number: int, round_index: int) -> list[float]:
        wd = tuner.dir / "revalidation" / f"r{round_index}_{number:05d}"
        from gptuner_core.engine.remeasure import remeasure

        res = remeasure(tuner, by_number[number], wd)
        if res is None:
            msg = f"re-measurement of candidate #{number} failed (see {wd}/log.txt)"
            raise BackendError(msg)
        return list(res["samples_ms"])

    try:
        result = revalidate(
            [r.number for r in top], 0, measure_fresh, rounds=max(cfg.revalidate_rounds, 2),
            seed=cfg.seed, min_effect=cfg.min_effect,
        )
    except GptunerError as exc:
        best = eligible[0]
        store.add_event("revalidation", {"error": str(exc)})
        return {
            "number": 0, "speedup": 1.0, "ci": None, "significant": False, "best": best.number,
            "message": f"re-validation failed ({exc}); keeping the default route "
                       f"(best screening result: #{best.number}, {best.speedup:.3f}x)",
        }
    store.add_event("revalidation", result.to_json())
    return result.winner_meta()


def write_output(tuner: Tuner, store: StudyStore, winner: dict[str, Any]) -> Path | None:
    """Copy the winning artifact to ``config.output`` with a JSON sidecar."""
    cfg = tuner.config
    rec = store.candidate(int(winner["number"]))
    if rec is None or not rec.artifact_path or not Path(rec.artifact_path).exists():
        return None
    src = Path(rec.artifact_path)
    dst = Path(cfg.output).resolve()
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dst)
    sidecar = dst.with_name(dst.name + ".json")
    sidecar.write_text(json.dumps({
        "route": rec.requested_route,
        "effective_route": rec.effective_route,
        "candidate": rec.number,
        "speedup": winner.get("speedup"),
        "speedup_ci": winner.get("ci"),
        "significant": winner.get("significant"),
        "latency_ms": rec.latency.median_ms if rec.latency else None,
        "accuracy": rec.accuracy.to_json() if rec.accuracy else None,
        "fingerprint": store.fingerprint(),
        "study": str(tuner.dir),
    }, indent=2), encoding="utf-8")
    return dst
