"""The bundle's manifest: what it holds, and the sha256 of every file (verified on load)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gptuner_core.errors import BundleError


MANIFEST = "manifest.json"
FORMAT = "gptuner-bundle/1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Bundle:
    """A verified baseline bundle (see :func:`load_bundle`).

    ``artifact`` is the bundled artifact; ``info`` the backend's build info with its file
    references pointing into the bundle; ``config`` the study's ``study.json``.
    """

    root: Path
    study: str
    backend: str
    candidate: int
    route: str
    effective_route: str
    default_route: str
    artifact: Path
    info: dict[str, Any]
    config: dict[str, Any]
    fingerprint: dict[str, Any]
    winner: dict[str, Any] | None
    accuracy: dict[str, Any] | None
    timing_cache: dict[str, Any]
    commands: tuple[str, ...]
    batch_axes: dict[str, int | None] = field(default_factory=dict)
    model: Path | None = None  # the study's model, copied (None when it was gone)
    files: dict[str, str] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        return self.root / name

    def has(self, name: str) -> bool:
        return name in self.files

    def samples(self) -> dict[str, Any]:
        return json.loads(self.path("samples.json").read_text(encoding="utf-8"))


def read_manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST
    if not path.is_file():
        msg = f"'{root}' is not a baseline bundle (expected {path}; make one with 'gptuner bundle STUDY -o DIR')"
        raise BundleError(msg)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        msg = f"bundle manifest '{path}' is unreadable ({exc}); expected the JSON 'gptuner bundle' writes"
        raise BundleError(msg) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        got = data.get("format") if isinstance(data, dict) else type(data).__name__
        msg = f"bundle manifest '{path}': format {got!r} is not supported (expected {FORMAT!r})"
        raise BundleError(msg)
    return data


def verify_files(root: Path, files: dict[str, str]) -> None:
    """Raise BundleError naming the first file whose sha256 differs from the manifest's."""
    from gptuner_core.fingerprint import file_sha256

    for name, expected in sorted(files.items()):
        path = root / name
        if not path.is_file():
            msg = f"bundle '{root}': file '{name}' listed in the manifest is missing"
            raise BundleError(msg)
        found = file_sha256(path)
        if found != expected:
            msg = (
                f"bundle '{root}': file '{name}' does not match the manifest "
                f"(expected sha256 {expected}, found {found}); the bundle was changed after it was made"
            )
            raise BundleError(msg)


def load_bundle(root: str | Path) -> Bundle:
    """Open the bundle in ``root`` after checking every file's hash against the manifest."""
    root = Path(root).absolute()
    data = read_manifest(root)
    files = dict(data.get("files") or {})
    verify_files(root, files)
    info = dict(data.get("info") or {})
    for key, rel in (data.get("info_files") or {}).items():
        info[key] = str(root / rel)
    return Bundle(
        root=root, study=str(data.get("study", "")), backend=str(data["backend"]),
        candidate=int(data.get("candidate", 0)), route=str(data.get("route", "")),
        effective_route=str(data.get("effective_route") or data.get("route", "")),
        default_route=str(data.get("default_route", "")), artifact=root / data["artifact"],
        info=info, config=dict(data.get("config") or {}),
        fingerprint=dict(data.get("fingerprint") or {}), winner=data.get("winner"),
        accuracy=data.get("accuracy"), timing_cache=dict(data.get("timing_cache") or {}),
        commands=tuple(data.get("commands") or ()), files=files,
        batch_axes=dict(data.get("batch_axes") or {}),
        model=root / data["model"] if data.get("model") else None,
    )
