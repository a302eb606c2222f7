"""Load ``all_build_routes`` as leniently as trtexec's ``BuildRouteKnobDatabase::loadFromJsonString``.

trtexec (sampleTuning.cpp) skips entries that are not objects, reads each field only when it is a
string (otherwise the field is empty), skips entries with an empty ``option``, and lets a
duplicate ``option`` overwrite the earlier definition. Only a missing/non-array ``tuner_options``,
invalid JSON or no usable knob at all make it reject the database. gptuner does the same, so one
odd entry in a real 200-knob database never disables the backend; each skipped or defaulted
entry is reported (:func:`load_report`, ``gptuner doctor``). One difference: gptuner also skips
names without the leading ``-``, which its route grammar cannot address.
"""

from __future__ import annotations

import json
from typing import Any

from gptuner_core.errors import KnobDatabaseError
from gptuner_core.knobs import KnobDatabase


FIELDS = ("option", "allowed_values", "default_value", "help")


def clean(text: str, *, source: str = "<string>") -> tuple[dict[str, Any], list[str]]:
    """``(database JSON gptuner's strict parser accepts, report lines)``."""
    try:
        root = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"knob database {source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        raise KnobDatabaseError(msg) from None
    if not isinstance(root, dict) or not isinstance(root.get("tuner_options"), list):
        got = type(root.get("tuner_options")).__name__ if isinstance(root, dict) else type(root).__name__
        msg = f"knob database {source}: field 'tuner_options' must be a list (got {got}); trtexec rejects this database too"
        raise KnobDatabaseError(msg)
    version = root.get("tuner_version")
    report: list[str] = []
    if not isinstance(version, str):
        report.append(f"tuner_version is {version!r}, not a string: read as 'unknown' (as trtexec does)")
        version = "unknown"
    knobs: dict[str, dict[str, str]] = {}
    for i, item in enumerate(root["tuner_options"]):
        where = f"tuner_options[{i}]"
        if not isinstance(item, dict):
            report.append(f"{where} is not an object ({type(item).__name__}): skipped")
            continue
        entry = {}
        for key in FIELDS:
            value = item.get(key, "")
            if not isinstance(value, str):
                if key != "option":  # reported below as "no string 'option'"
                    report.append(f"{where}.{key} is {value!r}, not a string: read as ''")
                value = ""
            entry[key] = value
        name = entry["option"]
        if not name:
            report.append(f"{where} has no string 'option': skipped")
            continue
        if not name.startswith("-") or len(name) < 2:
            report.append(f"{where}.option {name!r} has no leading '-': skipped (a route cannot name it)")
            continue
        if name in knobs:
            report.append(f"{where}: duplicate knob {name}: the later definition replaces the earlier one (as in trtexec)")
        knobs[name] = entry
    if not knobs:
        msg = f"knob database {source}: no usable knob in tuner_options ({len(report)} entries skipped); trtexec rejects it too"
        raise KnobDatabaseError(msg)
    return {"tuner_version": version, "tuner_options": list(knobs.values())}, report


def parse_lenient(text: str, *, source: str = "<string>") -> KnobDatabase:
    """The database trtexec would use, as a :class:`KnobDatabase`."""
    data, _ = clean(text, source=source)
    return KnobDatabase.from_json(data, source=source)


def load_report(text: str, *, source: str = "<string>") -> list[str]:
    """What the lenient loader skipped or defaulted (empty for a clean database)."""
    return clean(text, source=source)[1]
