"""Knob databases in TensorRT's ``all_build_routes`` JSON schema.

Schema (see ``shared/reference/tensorrt-gpt.md`` §1)::

    {"tuner_version": "2.19.45",
     "tuner_options": [{"option": "-kgen:tiling", "allowed_values": "-kgen:tiling=[0|1|2]",
                        "default_value": "1", "help": "..."}]}

Every backend describes its knobs in this schema, so expressions, the CLI and the dashboard treat
all backends alike. Order is meaningful (it defines the default route) and preserved.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import KnobDatabaseError


if TYPE_CHECKING:
    from collections.abc import Iterator


def parse_allowed_values(text: str) -> tuple[str, ...] | None:
    """Values between the first ``[`` and the first ``]`` split on ``|``; ``None`` if unbounded.

    Mirrors trtexec's ``parseAllowedValues``: pieces are trimmed of spaces/tabs and empty pieces
    dropped. Unbounded means no bracket list (``-k=int32_t``), a ``]`` before the ``[``, a list
    containing ``...``, or a list with no value at all.
    """
    start = text.find("[")
    end = text.find("]")
    if start < 0 or end < 0 or end <= start:
        return None
    inner = text[start + 1 : end]
    if "..." in inner:
        return None
    values = tuple(v for v in (p.strip(" \t") for p in inner.split("|")) if v)
    return values or None


@dataclass(frozen=True, slots=True, kw_only=True)
class Knob:
    """One build-route knob. ``values`` is ``None`` for unbounded (open-ended) knobs."""

    name: str
    values: tuple[str, ...] | None
    default: str
    help: str = ""
    allowed_text: str = ""

    @property
    def namespace(self) -> str:
        """Prefix before the last ``:`` without the leading dash (``kgen:codegen``), or ``""``."""
        bare = self.name.lstrip("-")
        return bare.rsplit(":", 1)[0] if ":" in bare else ""

    @property
    def bounded(self) -> bool:
        return self.values is not None

    @property
    def unbounded_type(self) -> str:
        """What stands after ``=`` for an unbounded knob (e.g. ``int32_t``), else ``""``."""
        if self.bounded:
            return ""
        _, _, rhs = self.allowed_text.partition("=")
        return rhs.strip() or "unbounded"

    def allows(self, value: str) -> bool:
        return self.values is None or value in self.values

    def to_json(self) -> dict[str, str]:
        allowed = self.allowed_text or (
            f"{self.name}=[{'|'.join(self.values)}]" if self.values is not None else self.name
        )
        return {
            "option": self.name,
            "allowed_values": allowed,
            "default_value": self.default,
            "help": self.help,
        }


def _field(entry: dict[str, Any], key: str, index: int, source: str, *, required: bool) -> str:
    if key not in entry:
        if not required:
            return ""
        msg = f"knob database {source}: tuner_options[{index}] is missing field '{key}'"
        raise KnobDatabaseError(msg)
    value = entry[key]
    if not isinstance(value, str):
        msg = (
            f"knob database {source}: tuner_options[{index}].{key} must be a string "
            f"(got {value!r} of type {type(value).__name__})"
        )
        raise KnobDatabaseError(msg)
    return value


class KnobDatabase:
    """An ordered, immutable set of knobs with a ``tuner_version``."""

    def __init__(self, tuner_version: str, knobs: list[Knob] | tuple[Knob, ...]) -> None:
        self.tuner_version = tuner_version
        self.knobs: tuple[Knob, ...] = tuple(knobs)
        self._by_name = {k.name: k for k in self.knobs}
        if len(self._by_name) != len(self.knobs):
            seen: set[str] = set()
            dup = next(k.name for k in self.knobs if k.name in seen or seen.add(k.name))
            msg = f"knob database: knob '{dup}' is listed more than once"
            raise KnobDatabaseError(msg)

    # -- loading ---------------------------------------------------------------------------
    @classmethod
    def from_json(cls, data: Any, *, source: str = "<string>") -> KnobDatabase:
        if not isinstance(data, dict):
            msg = (
                f"knob database {source}: expected a JSON object with 'tuner_version' and "
                f"'tuner_options' (got {type(data).__name__})"
            )
            raise KnobDatabaseError(msg)
        version = data.get("tuner_version", "unknown")
        if not isinstance(version, str):
            msg = f"knob database {source}: 'tuner_version' must be a string (got {version!r})"
            raise KnobDatabaseError(msg)
        options = data.get("tuner_options")
        if not isinstance(options, list):
            got = "nothing" if options is None else type(options).__name__
            msg = f"knob database {source}: field 'tuner_options' must be a list (got {got})"
            raise KnobDatabaseError(msg)
        knobs = []
        for i, entry in enumerate(options):
            if not isinstance(entry, dict):
                msg = (
                    f"knob database {source}: tuner_options[{i}] must be an object "
                    f"(got {type(entry).__name__})"
                )
                raise KnobDatabaseError(msg)
            name = _field(entry, "option", i, source, required=True)
            if not name.startswith("-") or len(name) < 2:
                msg = (
                    f"knob database {source}: tuner_options[{i}].option must start with '-' "
                    f"(got {name!r})"
                )
                raise KnobDatabaseError(msg)
            allowed = _field(entry, "allowed_values", i, source, required=True)
            default = _field(entry, "default_value", i, source, required=True)
            knobs.append(
                Knob(
                    name=name,
                    values=parse_allowed_values(allowed),
                    default=default,
                    help=_field(entry, "help", i, source, required=False),
                    allowed_text=allowed,
                )
            )
        return cls(version, knobs)

    @classmethod
    def from_string(cls, text: str, *, source: str = "<string>") -> KnobDatabase:
        from gptuner_core.jsonio import loads

        return cls.from_json(loads(text, f"knob database {source}", KnobDatabaseError), source=source)

    @classmethod
    def from_file(cls, path: str | Path) -> KnobDatabase:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            msg = f"knob database '{p}': cannot read file ({exc.strerror or exc})"
            raise KnobDatabaseError(msg) from None
        except UnicodeDecodeError:
            msg = f"knob database '{p}': expected UTF-8 JSON text (got binary data)"
            raise KnobDatabaseError(msg) from None
        return cls.from_string(text, source=f"'{p}'")

    # -- access ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.knobs)

    def __iter__(self) -> Iterator[Knob]:
        return iter(self.knobs)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str) -> Knob | None:
        return self._by_name.get(name)

    def __getitem__(self, name: str) -> Knob:
        try:
            return self._by_name[name]
        except KeyError:
            msg = f"Unknown knob: {name}"
            raise KnobDatabaseError(msg) from None

    def namespaces(self) -> list[str]:
        return sorted({k.namespace for k in self.knobs})

    # -- serialization ---------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "tuner_version": self.tuner_version,
            "tuner_options": [k.to_json() for k in self.knobs],
        }

    def to_string(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_json(), indent=indent)

    @property
    def sha256(self) -> str:
        """Hash of the canonical compact JSON: equal databases hash equal."""
        text = json.dumps(self.to_json(), separators=(",", ":"), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KnobDatabase) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self.sha256)

    def __repr__(self) -> str:
        return f"KnobDatabase(tuner_version={self.tuner_version!r}, knobs={len(self.knobs)})"


@dataclass(frozen=True, slots=True, kw_only=True)
class KnobChange:
    name: str
    old: Knob
    new: Knob


@dataclass(frozen=True, slots=True, kw_only=True)
class KnobDiff:
    """Difference between two databases (``old`` -> ``new``)."""

    old_version: str
    new_version: str
    added: tuple[Knob, ...]
    removed: tuple[Knob, ...]
    default_changed: tuple[KnobChange, ...]
    values_changed: tuple[KnobChange, ...]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.default_changed or self.values_changed)


def diff_knob_databases(old: KnobDatabase, new: KnobDatabase) -> KnobDiff:
    """Knobs added, removed, with a changed default, with changed allowed values."""
    added = tuple(k for k in new if k.name not in old)
    removed = tuple(k for k in old if k.name not in new)
    default_changed = []
    values_changed = []
    for k in old:
        n = new.get(k.name)
        if n is None:
            continue
        if n.default != k.default:
            default_changed.append(KnobChange(name=k.name, old=k, new=n))
        if n.values != k.values or (n.bounded is False and n.allowed_text != k.allowed_text):
            values_changed.append(KnobChange(name=k.name, old=k, new=n))
    return KnobDiff(
        old_version=old.tuner_version,
        new_version=new.tuner_version,
        added=added,
        removed=removed,
        default_changed=tuple(default_changed),
        values_changed=tuple(values_changed),
    )
