"""Notes sidecar: round trip, atomic replace, never the store."""

from __future__ import annotations

import json

import pytest

from gptuner_core.dashboard import notes


def test_round_trip(tmp_path) -> None:
    assert notes.read_notes(tmp_path) == notes.Notes()
    notes.write_note(tmp_path, "int8 wins on this CPU")
    notes.write_note(tmp_path, "suspicious: CV 9 %", candidate=3)
    got = notes.read_notes(tmp_path)
    assert got.study == "int8 wins on this CPU" and got.candidates == {3: "suspicious: CV 9 %"}
    notes.write_note(tmp_path, "", candidate=3)
    assert notes.read_notes(tmp_path).candidates == {}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.json"]  # no temp file left


def test_bad_file_and_long_note(tmp_path) -> None:
    (tmp_path / "notes.json").write_text("{not json")
    with pytest.raises(notes.NotesError, match="cannot be read"):
        notes.read_notes(tmp_path)
    (tmp_path / "notes.json").write_text(json.dumps({"study": "x"}))
    with pytest.raises(notes.NotesError, match="note too long"):
        notes.write_note(tmp_path, "x" * 30_000)
