"""A study's inputs: loaded and validated before anything is written, stored atomically once,
verified (by content hash) whenever a study is continued."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gptuner_core.engine.files.workspace import arrays_sha256
from gptuner_core.engine.files.workspace import load_npz
from gptuner_core.engine.files.workspace import save_npy_atomic
from gptuner_core.engine.files.workspace import save_npz_atomic
from gptuner_core.errors import DatasetError
from gptuner_core.errors import StoreError


if TYPE_CHECKING:
    from pathlib import Path

    from gptuner_core.backends import TensorSpec
    from gptuner_core.config import StudyConfig
    from gptuner_core.dataset import Dataset
    from gptuner_core.engine.files.workspace import StudyWorkspace

CALIBRATION_ROWS = 64
SYNTHETIC_ROWS = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyInputs:
    """Where a study's inputs live, and their labels (for task metrics)."""

    inputs_path: Path
    calibration_path: Path | None
    labels_path: Path | None
    labels: np.ndarray | None
    sha256: str
    batch_axes: dict[str, int | None]
    measure_feeds: tuple[Path, ...] = ()
    measure_labels: tuple[str, ...] = ()


def resolved_specs(cfg: StudyConfig, specs: list[TensorSpec]) -> list:
    """The model's inputs with the study's overrides: batch axes, shapes, value ranges."""
    from gptuner_core.shapes import input_specs
    from gptuner_core.shapes import parse_batch_axes
    from gptuner_core.shapes import parse_profile
    from gptuner_core.shapes import parse_value_ranges

    return list(input_specs(
        specs,
        batch_axes=parse_batch_axes(cfg.batch_axes) if cfg.batch_axes else None,
        value_ranges=parse_value_ranges(cfg.input_ranges) if cfg.input_ranges else None,
        shapes=parse_profile(shapes=cfg.shapes) if cfg.shapes else None,
    ))


def calibration_rows(cfg: StudyConfig, specs: list[TensorSpec], ds: Dataset) -> dict[str, np.ndarray]:
    """Calibration rows: from ``cfg.calibration`` when given, else from the dataset."""
    from gptuner_core.dataset import load_dataset

    source = load_dataset(cfg.calibration, resolved_specs(cfg, specs)) if cfg.calibration else ds
    return source.calibration(CALIBRATION_ROWS)


def load_inputs(cfg: StudyConfig, specs: list[TensorSpec]) -> Dataset:
    """Load and validate the dataset (or synthesize inputs) before anything is written."""
    from gptuner_core.dataset import load_dataset
    from gptuner_core.dataset import synthesize
    from gptuner_core.dataset import validate_batch_size
    from gptuner_core.errors import ConfigError

    specs = resolved_specs(cfg, specs)
    validate_batch_size(specs, cfg.batch_size)
    ds = load_dataset(cfg.dataset, specs) if cfg.dataset else synthesize(
        specs, SYNTHETIC_ROWS, seed=cfg.seed
    )
    if cfg.dataset:
        validate_batch_size(specs, cfg.batch_size, dataset=ds)
    where = f"dataset '{cfg.dataset}'" if cfg.dataset else "synthesized inputs"
    for name, value in ds.inputs.items():
        arr = np.asarray(value)
        if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
            bad = int(arr.size - np.isfinite(arr).sum())
            msg = (
                f"{where}: input '{name}' holds {bad} non-finite value(s) (NaN or inf); inputs "
                "must be finite, or the default route's outputs would become a non-finite "
                "golden reference"
            )
            raise DatasetError(msg)
    if cfg.task_metric == "top1":
        if ds.labels is None:
            msg = (
                "--task-metric top1 needs labels: the dataset must hold a 'labels' array "
                f"(dataset: {cfg.dataset or 'none, inputs are synthesized'})"
            )
            raise ConfigError(msg)
        labels = np.asarray(ds.labels)
        if labels.ndim != 1 or labels.dtype.kind not in "iu":
            msg = (
                f"{where}: 'labels' must be a 1-D array of integer class ids for --task-metric "
                f"top1 (got dtype {labels.dtype}, shape {list(labels.shape)})"
            )
            raise DatasetError(msg)
    return ds


def measure_feeds(cfg: StudyConfig, specs: list[TensorSpec], ds: Dataset) -> list[tuple[str, dict[str, np.ndarray]]]:
    """One feed per ``--measure-shapes`` profile, ``(label, arrays)``: the inputs latency is
    measured on at that shape (validated before anything is written).

    Rows come from the dataset (its first rows) wherever the dataset's arrays have the asked
    shape apart from the batch axis; an input asked at other dims (e.g. a longer sequence) is
    synthesized at that shape, with its value range (``--input-range``). Inputs not named take
    the named inputs' row count from the dataset; fixed inputs are fed as stored.
    """
    from gptuner_core.batching import take
    from gptuner_core.dataset import synthesize
    from gptuner_core.shapes import input_specs
    from gptuner_core.shapes import parse_shapes
    from gptuner_core.shapes import shape_label

    base = resolved_specs(cfg, specs)
    out = []
    for text in cfg.measure_shapes:
        shapes = parse_shapes(text, option="--measure-shapes")
        label = shape_label(shapes)
        resolved = {s.name: s for s in input_specs(base, shapes=shapes)}
        rows = {s.name: shapes[s.name][s.batch_axis] for s in resolved.values()
                if s.name in shapes and s.batch_axis is not None}
        if len(set(rows.values())) > 1:
            msg = (f"--measure-shapes {label}: the batched inputs disagree on the batch size "
                   f"({rows}; expected one row count along every batch axis)")
            raise DatasetError(msg)
        n = next(iter(rows.values()), cfg.batch_size)
        feed: dict[str, np.ndarray] = {}
        for name, spec in resolved.items():
            have = np.asarray(ds.inputs[name])
            axis = spec.batch_axis
            want = shapes.get(name)
            if axis is None:
                same = want is None or tuple(have.shape) == want
                feed[name] = have if same else synthesize([spec], 1, seed=cfg.seed).inputs[name]
                continue
            other = [d for i, d in enumerate(have.shape) if i != axis]
            fits = want is None or other == [d for i, d in enumerate(want) if i != axis]
            if fits and have.shape[axis] >= n:
                feed[name] = take({name: have}, {name: axis}, slice(0, n))[name]
            elif want is not None:
                feed[name] = synthesize([spec], n, seed=cfg.seed).inputs[name]
            else:
                msg = (f"--measure-shapes {label}: input '{name}' needs {n} row(s) and "
                       f"{'the dataset' if cfg.dataset else 'the synthesized inputs'} hold "
                       f"{have.shape[axis]} (expected a shape for '{name}' too, or more rows)")
                raise DatasetError(msg)
        out.append((label, feed))
    return out


def store_measure_feeds(ws: StudyWorkspace, feeds: list[tuple[str, dict[str, np.ndarray]]]) -> tuple[Path, ...]:
    paths = []
    for i, (_label, arrays) in enumerate(feeds):
        path = ws.root / f"measure_shape_{i}.npz"
        save_npz_atomic(path, arrays)
        paths.append(path)
    return tuple(paths)


def store_inputs(ws: StudyWorkspace, ds: Dataset, calibration: dict[str, np.ndarray] | None = None) -> str:
    """Write inputs, calibration rows and labels atomically; return the inputs' content hash."""
    save_npz_atomic(ws.calibration, calibration if calibration is not None else ds.calibration(CALIBRATION_ROWS))
    if ds.labels is not None:
        save_npy_atomic(ws.labels, np.asarray(ds.labels))
    arrays = {k: np.asarray(v) for k, v in ds.inputs.items()}
    save_npz_atomic(ws.inputs, arrays)
    return arrays_sha256(arrays)


def open_inputs(
    ws: StudyWorkspace, cfg: StudyConfig, specs: list[TensorSpec], recorded_sha: str | None,
    batch_axes: dict[str, int | None] | None = None,
) -> StudyInputs:
    """The stored inputs of a study, verified against the hash recorded at creation.

    A missing or damaged ``inputs.npz`` (e.g. a full disk) is rebuilt from the configuration
    when that reproduces the recorded content exactly; otherwise the study is refused with the
    reason, never measured on different inputs.
    """
    try:
        arrays = load_npz(ws.inputs)
        sha = arrays_sha256(arrays)
    except (FileNotFoundError, StoreError) as exc:
        problem = "missing" if isinstance(exc, FileNotFoundError) else str(exc)
        sha = None
    else:
        problem = "" if recorded_sha in (None, sha) else "its content differs from the recorded hash"
    if problem:
        ds = load_inputs(cfg, specs)
        rebuilt = store_inputs(ws, ds, calibration_rows(cfg, specs, ds))
        if recorded_sha is not None and rebuilt != recorded_sha:
            msg = (
                f"study inputs '{ws.inputs}' are unusable ({problem}) and the dataset no longer "
                f"reproduces them (recorded sha256 {recorded_sha[:12]}…, now {rebuilt[:12]}…); "
                "the study cannot be continued on the same inputs"
            )
            raise StoreError(msg)
        sha = rebuilt
    try:
        load_npz(ws.calibration)
    except (FileNotFoundError, StoreError):
        save_npz_atomic(ws.calibration, calibration_rows(cfg, specs, load_inputs(cfg, specs)))
    labels = None
    if ws.labels.exists():
        try:
            labels = np.load(ws.labels, allow_pickle=False)
        except Exception:  # noqa: BLE001 - a damaged labels file is rebuilt like the inputs
            ds = load_inputs(cfg, specs)
            labels = np.asarray(ds.labels) if ds.labels is not None else None
            if labels is not None:
                save_npy_atomic(ws.labels, labels)
    feeds: tuple[Path, ...] = ()
    labels_of_shapes: tuple[str, ...] = ()
    if cfg.measure_shapes:  # deterministic from the configuration: rebuilt when missing
        built = measure_feeds(cfg, specs, load_inputs(cfg, specs))
        paths = tuple(ws.root / f"measure_shape_{i}.npz" for i in range(len(built)))
        feeds = paths if all(p.exists() for p in paths) else store_measure_feeds(ws, built)
        labels_of_shapes = tuple(label for label, _ in built)
    return StudyInputs(
        inputs_path=ws.inputs, calibration_path=ws.calibration,
        labels_path=ws.labels if labels is not None else None, labels=labels, sha256=str(sha),
        batch_axes=dict(batch_axes or {}), measure_feeds=feeds, measure_labels=labels_of_shapes,
    )
