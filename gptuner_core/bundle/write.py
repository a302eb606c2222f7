"""``write_bundle``: copy a study's recommended artifact and its evidence into a bundle folder."""

from __future__ import annotations

import json
import shlex
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.bundle.manifest import FORMAT
from gptuner_core.bundle.manifest import MANIFEST
from gptuner_core.errors import BundleError


if TYPE_CHECKING:
    from gptuner_core.records import CandidateRecord
    from gptuner_core.storage import StudyStore

#: study files the gate needs (golden outputs and the inputs they were produced from)
STUDY_FILES = ("study.json", "golden.npz", "inputs.npz", "labels.npy", "reference.json", "calibration.npz")


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy2(src, dst)


def _usable(rec: CandidateRecord | None, study: Path) -> bool:
    """The record's artifact exists inside the study (a stored path is never followed out)."""
    from gptuner_core.storage.paths import confined_or_none

    path = confined_or_none(rec.artifact_path, study) if rec is not None else None
    return path is not None and path.exists()


def _recommended(store: StudyStore, study: Path) -> tuple[CandidateRecord, str]:
    """The winner's record (the default route when there is no winner or its artifact is gone)."""
    winner = store.winner()
    number = winner.number if winner is not None else 0
    note = "" if winner is not None else "the study has no verdict yet: the default route is bundled"
    rec = store.candidate(number)
    if not _usable(rec, study):
        if number != 0:
            note = f"candidate #{number}'s artifact is gone: the default route is bundled"
        rec = store.candidate(0)
    if rec is None or not _usable(rec, study):
        msg = (
            f"study '{study}' has no artifact to bundle (expected the recommended candidate's or "
            "the default route's artifact under candidates/; was it run with --discard-artifacts?)"
        )
        raise BundleError(msg)
    return rec, note


def _timing_cache(backend: str, config: dict[str, Any], study: Path, out: Path) -> dict[str, Any]:
    if backend != "tensorrt":
        return {"included": False, "reason": f"the {backend} backend has no timing cache"}
    from gptuner_core.storage.paths import confined_or_none

    opts = config.get("backend_options") or {}
    stored = opts.get("timing_cache_path") or study / "tensorrt_timing.cache"
    path = confined_or_none(stored, study)
    if path is None:
        return {"included": False, "reason": f"the timing cache '{stored}' is outside the study folder: not read"}
    if not path.is_file():
        return {"included": False, "reason": f"no shared timing cache at '{path}' (isolated mode keeps it beside the engine)"}
    _copy(path, out / "timing.cache")
    return {"included": True, "file": "timing.cache", "source": str(path)}


def _revalidation(store: StudyStore, numbers: set[int]) -> list[dict[str, Any]]:
    rounds = []
    for ev in store.events("revalidation"):
        medians = ev.payload.get("round_medians") or {}
        rounds.append({
            "time": ev.time, "verdict": ev.payload.get("verdict"), "error": ev.payload.get("error"),
            "round_medians_ms": {k: v for k, v in medians.items() if int(k) in numbers},
            "schedule": ev.payload.get("schedule"),
        })
    return rounds


def _round_samples(study: Path, numbers: set[int]) -> dict[str, dict[str, list[float]]]:
    """Raw samples of every re-validation process of ``numbers`` (``revalidation/rR_NNNNN``)."""
    from gptuner_core.storage.paths import inside

    out: dict[str, dict[str, list[float]]] = {}
    for folder in sorted((study / "revalidation").glob("r*_*")):
        rnd, _, num = folder.name.partition("_")
        if not num.isdigit() or int(num) not in numbers or not (folder / "result.json").is_file():
            continue
        if not inside(folder / "result.json", study):  # a symlink out of the folder
            continue
        try:
            samples = json.loads((folder / "result.json").read_text(encoding="utf-8")).get("samples_ms") or []
        except (OSError, ValueError):
            continue
        out.setdefault(str(int(num)), {})[rnd] = [float(x) for x in samples]
    return out


def _model(config: dict[str, Any], fingerprint: dict[str, Any], backend: Any) -> list[Path]:
    """The study's model files, when they still hash to the recorded ``model_sha256``: the model
    lies outside the study, so a stored model path is followed only to the model that was tuned."""
    from gptuner_core.fingerprint import model_files
    from gptuner_core.fingerprint import model_sha256

    model = Path(str(config.get("model") or ""))
    if not model.is_file():
        return []
    files = model_files(backend, model)
    return files if model_sha256(files) == fingerprint.get("model_sha256") else []


def _commands(study: Path, out: Path) -> list[str]:
    q = shlex.quote
    return [
        f"gptuner tune --config {q(str(out / 'study.json'))} --study {q(str(study) + '-rebuilt')}",
        f"gptuner bundle {q(str(study) + '-rebuilt')} -o {q(str(out) + '-rebuilt')}",
        f"gptuner gate {q(str(out))} --model MODEL",
    ]


def write_bundle(study: str | Path, out: str | Path, *, replace: bool = False) -> Path:
    """Write the bundle of ``study``'s recommended candidate into the empty (or new) ``out``
    (``replace``: an existing bundle there too), whole or not at all (``bundle.staging``)."""
    from gptuner_core.bundle import staging

    ws_root = Path(study).absolute()
    out = Path(out).absolute()
    stage = staging.prepare(out, replace=replace) if _has_study(ws_root) else None
    if stage is None:
        msg = f"'{study}' holds no study (expected {ws_root / 'study.sqlite'})"
        raise BundleError(msg)
    try:
        _write(ws_root, stage, out)
    except BaseException as exc:
        staging.abandon(stage)
        if isinstance(exc, OSError):  # a full disk: name the bundle, not only a staged file
            from gptuner_core.errors import os_error_text

            msg = f"bundle '{out}' not written: {os_error_text(exc)}"
            raise BundleError(msg) from None
        raise
    staging.publish(stage, out)
    return out


def _has_study(root: Path) -> bool:
    from gptuner_core.engine.files.workspace import StudyWorkspace

    return StudyWorkspace(root).has_study()


def _write(study: Path, out: Path, final: Path) -> None:
    """Write the bundle into the staging folder ``out`` (paths inside it name ``final``)."""
    from gptuner_core.backends import load_backend
    from gptuner_core.engine.files.export import copy_artifact
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.engine.files.workspace import write_atomic
    from gptuner_core.fingerprint import copy_model
    from gptuner_core.fingerprint import file_sha256
    from gptuner_core.storage import open_store
    from gptuner_core.storage.paths import confined
    from gptuner_core.storage.paths import inside

    ws = StudyWorkspace(study)
    with open_store(ws.root, readonly=True) as store:
        config = store.config()
        rec, note = _recommended(store, ws.root)
        default = store.candidate(0)
        winner = store.winner()
        fingerprint = store.fingerprint()
        batch_axes = dict(store.get_meta("batch_axes") or {})
        samples = {
            "winner": {"number": rec.number, "screening_ms": list(rec.samples_ms)},
            "default": {"number": 0, "screening_ms": list(default.samples_ms) if default else []},
            "revalidation": _revalidation(store, {0, rec.number}),
            "revalidation_samples_ms": _round_samples(ws.root, {0, rec.number}),
        }
    src = confined(rec.artifact_path, ws.root, what="artifact")
    artifact_rel = f"artifact/{src.name}"
    backend = load_backend(str(config.get("backend")), dict(config.get("backend_options") or {}))
    model = _model(config, fingerprint, backend)
    allowed = [ws.root, *([model[0].parent] if model else [])]  # the verified model's data files
    copy_artifact(str(config.get("backend")), dict(config.get("backend_options") or {}), rec,
                  out / artifact_rel, allowed=allowed)
    info = dict(rec.extra.get("info") or {})
    info_files: dict[str, str] = {}
    for key, value in list(info.items()):
        if not isinstance(value, str) or not Path(value).is_file():
            continue
        p = Path(value)
        if not (inside(p, ws.root) or (model and p.resolve() == model[0].resolve())):
            info[key] = None  # a stored path out of the folder (not the tuned model): not copied
            continue
        try:
            rel = f"{artifact_rel}/{p.resolve().relative_to(src.resolve())}"
        except ValueError:
            rel = f"info/{key}{''.join(p.suffixes)}"
            _copy(p, out / rel)
            for data in backend.model_files(p)[1:]:  # external data, named as the model refers to it
                _copy(data, (out / rel).parent / data.relative_to(p.parent))
        info_files[key] = rel
        info[key] = rel
    model_rel = copy_model(model, out / "model").relative_to(out).as_posix() if model else None
    for name in STUDY_FILES:
        if (ws.root / name).is_file() and inside(ws.root / name, ws.root):  # no symlink out
            _copy(ws.root / name, out / name)
    write_atomic(out / "samples.json", json.dumps(samples, indent=1).encode())
    write_atomic(out / "fingerprint.json", json.dumps(fingerprint, indent=2).encode())
    commands = _commands(ws.root, final)
    write_atomic(out / "rebuild.sh", ("#!/bin/sh\nset -e\n" + "\n".join(commands[:2]) + "\n").encode())
    timing = _timing_cache(str(config.get("backend")), config, ws.root, out)
    files = {
        p.relative_to(out).as_posix(): file_sha256(p)
        for p in sorted(out.rglob("*")) if p.is_file() and p.name != MANIFEST
    }
    manifest = {
        "format": FORMAT, "created_at": time.time(), "study": str(ws.root),
        "backend": config.get("backend"), "candidate": rec.number, "route": rec.requested_route,
        "effective_route": rec.effective_route or rec.requested_route,
        "default_route": default.requested_route if default else "", "artifact": artifact_rel, "model": model_rel,
        "info": info, "info_files": info_files, "config": config, "fingerprint": fingerprint,
        "winner": winner.to_json() if winner else None, "note": note,
        "latency_ms": rec.latency.median_ms if rec.latency else None,
        "accuracy": rec.accuracy.to_json() if rec.accuracy else None,
        "timing_cache": timing, "commands": commands, "batch_axes": batch_axes, "files": files,
    }
    write_atomic(out / MANIFEST, json.dumps(manifest, indent=2, default=str).encode())
