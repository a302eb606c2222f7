"""Notes on a study and its candidates, in a sidecar ``STUDY/notes.json`` (no streamlit).

Notes are the user's, not the tuner's: they live beside the store, never in it, so the tuner
stays the single writer of ``study.sqlite``. Every write replaces the file atomically (write a
temporary file in the same folder, fsync, ``os.replace``), so a reader sees the old or the new
notes, never half of them.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from gptuner_core.errors import GptunerError


NOTES_FILE = "notes.json"
MAX_NOTE_CHARS = 20_000


class NotesError(GptunerError, ValueError):
    """A note cannot be read or written (bad file, too long)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Notes:
    """The study's note and one note per candidate number; ``updated_at`` of the last write."""

    study: str = ""
    candidates: dict[int, str] = field(default_factory=dict)
    updated_at: float | None = None

    def to_json(self) -> dict:
        return {"study": self.study, "candidates": {str(k): v for k, v in self.candidates.items()},
                "updated_at": self.updated_at}

    @classmethod
    def from_json(cls, data: dict) -> Notes:
        cands = data.get("candidates") or {}
        return cls(study=str(data.get("study") or ""),
                   candidates={int(k): str(v) for k, v in cands.items() if str(v)},
                   updated_at=data.get("updated_at"))


def read_notes(study: str | Path) -> Notes:
    """The notes of a study (empty when there is no sidecar; an unreadable one raises)."""
    from gptuner_core.storage.paths import inside

    path = Path(study) / NOTES_FILE
    if not path.is_file() or not inside(path, study):  # a link out of the folder is no sidecar
        return Notes()
    try:
        return Notes.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        msg = f"notes file '{path}' cannot be read ({exc}); fix or delete it"
        raise NotesError(msg) from None


def write_note(study: str | Path, text: str, *, candidate: int | None = None) -> Notes:
    """Set the study's note (``candidate=None``) or a candidate's; an empty text removes it."""
    if len(text) > MAX_NOTE_CHARS:
        msg = f"note too long: {len(text):,} characters (limit {MAX_NOTE_CHARS:,})"
        raise NotesError(msg)
    old = read_notes(study)
    cands = dict(old.candidates)
    if candidate is None:
        new = Notes(study=text, candidates=cands, updated_at=time.time())
    else:
        if text.strip():
            cands[int(candidate)] = text
        else:
            cands.pop(int(candidate), None)
        new = Notes(study=old.study, candidates=cands, updated_at=time.time())
    folder = Path(study)
    fd, tmp = tempfile.mkstemp(prefix=".notes-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(new.to_json(), fh, indent=1, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / NOTES_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return new
