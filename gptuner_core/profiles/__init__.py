"""Per-layer profiles of built candidates and the aligned diff of two of them.

``capture_profile`` writes ``profile.json`` (the candidate's child: ``record_profile`` after
measuring, then ``ProfileCapture.finish`` once the device is given back);
``load_profile`` reads it back; ``diff_profiles`` aligns two profiles by ONNX origin.
Backend modules (``profiles.onnxruntime``, ``profiles.torch``, ``profiles.tensorrt``) import
their runtime lazily.
"""

from __future__ import annotations

from pathlib import Path

from gptuner_core.profiles.capture import ProfileCapture
from gptuner_core.profiles.capture import ProfileOutcome
from gptuner_core.profiles.capture import capture_profile
from gptuner_core.profiles.capture import record_profile
from gptuner_core.profiles.diff import DiffRow
from gptuner_core.profiles.diff import LayerDiff
from gptuner_core.profiles.diff import diff_profiles
from gptuner_core.profiles.records import PROFILE_NAME
from gptuner_core.profiles.records import LayerProfile
from gptuner_core.profiles.records import LayerTime


def profile_path(study_dir: str | Path, number: int) -> Path:
    """Where candidate ``number``'s profile lives in a study folder."""
    return Path(study_dir) / "candidates" / f"{int(number):05d}" / PROFILE_NAME


def has_profile(study_dir: str | Path, number: int) -> bool:
    """Candidate ``number`` has a profile inside the study (a link out of it does not count)."""
    from gptuner_core.storage.paths import inside

    path = profile_path(study_dir, number)
    return path.is_file() and inside(path, study_dir)


def load_profile(study_dir: str | Path, number: int) -> LayerProfile | None:
    """Candidate ``number``'s stored profile, or ``None`` when it has none (or only a link out
    of the study folder: a stored file is never followed out, ``storage.paths.confined``)."""
    return LayerProfile.load(profile_path(study_dir, number)) if has_profile(study_dir, number) else None


__all__ = [
    "PROFILE_NAME",
    "DiffRow",
    "LayerDiff",
    "LayerProfile",
    "LayerTime",
    "ProfileCapture",
    "ProfileOutcome",
    "capture_profile",
    "diff_profiles",
    "has_profile",
    "load_profile",
    "profile_path",
    "record_profile",
]
