"""Validate a route ourselves before ``config.build_route = ...``, then read it back.

TensorRT's Python setter drops the ``bool`` that ``IBuilderConfig::setBuildRoute`` returns, so a
bad route silently leaves the config unchanged (reference §2.1). We therefore check every name and
value against the knob database first, and compare what the config reports afterwards,
canonically (:func:`check_readback`, assumption U1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.errors import BackendError
from gptuner_core.errors import InvalidRouteError
from gptuner_core.routes import Route


if TYPE_CHECKING:
    from gptuner_core.knobs import KnobDatabase


_INT_TYPES = re.compile(r"^u?int(8|16|32|64)?(_t)?$")
_INTEGER = re.compile(r"^[+-]?\d+$")


def validate_route(route: Route, db: KnobDatabase) -> None:
    """Raise :class:`InvalidRouteError` unless TensorRT would accept every ``-name=value``.

    Bounded knobs must use a listed value. Unbounded knobs reject the literal type placeholder
    (trtexec: ``Unbounded expression 'int32_t' not allowed``) and, when the placeholder is an integer
    type, any value that is not an integer.
    """
    route.validate(db)
    for name, value in route.assignments:
        knob = db[name]
        if knob.bounded:
            continue
        kind = knob.unbounded_type
        if value == kind:
            msg = f"Unbounded expression '{value}' not allowed: {name}={value} (expected a value)"
            raise InvalidRouteError(msg)
        if _INT_TYPES.match(kind) and not _INTEGER.match(value):
            msg = f"Invalid value for knob: {name}={value} (expected an integer, knob type {kind})"
            raise InvalidRouteError(msg)


def normalize(text: str) -> str:
    """Whitespace-normalized route text (TensorRT may re-join tokens)."""
    return " ".join(str(text or "").split())


@dataclass(frozen=True, slots=True, kw_only=True)
class Readback:
    """What ``config.build_route`` read back, compared with the request.

    ``effective`` is the read-back text (whitespace-normalized): the route gptuner records.
    ``differs`` is true when it is not token-for-token the request (order, spelling, added or
    omitted defaults); ``notes`` says how, for the Route trace.
    """

    effective: str
    differs: bool = False
    notes: tuple[str, ...] = ()


def _tokens(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for tok in normalize(text).split():
        name, _, value = tok.partition("=")
        out[name] = value
    return out


def same_value(a: str, b: str) -> bool:
    """Values equal up to spelling: exact, case-insensitive, or the same integer (``08`` = ``8``)."""
    if a == b or a.lower() == b.lower():
        return True
    return bool(_INTEGER.match(a) and _INTEGER.match(b) and int(a) == int(b))


def check_readback(requested: Route, readback: str | None, db: KnobDatabase | None = None) -> Readback:
    """Compare the request with ``config.build_route`` canonically (assumption U1).

    NvInfer.h only promises "the current build route string", so libnvinfer may normalize it
    (order, spacing, value spelling, defaults spelled out or left out). None of that fails a
    build: the read-back is recorded as the effective route. A candidate fails only when a
    requested knob was dropped (absent and not at its default) or changed (another value); the
    message names both strings.
    """
    got_text = normalize(readback or "")
    want_text = normalize(str(requested))
    got = _tokens(got_text)
    problems, notes = [], []
    for name, value in requested.assignments:
        if name not in got:
            knob = db.get(name) if db is not None else None
            if knob is not None and same_value(knob.default, value):
                notes.append(f"{name}={value} (the default) is not spelled out in the read-back")
                continue
            problems.append(f"dropped {name}={value}")
        elif not same_value(got[name], value):
            problems.append(f"changed {name}={value} to {name}={got[name]}")
        elif got[name] != value:
            notes.append(f"{name}={value} reads back as {name}={got[name]}")
    if problems:
        msg = (
            "TensorRT did not apply the requested build route (the Python setter reports no "
            f"error): {'; '.join(problems)}. requested {want_text!r}, config.build_route reads back "
            f"{got_text!r}; check the TensorRT log above for the reason"
        )
        raise BackendError(msg)
    requested_names = {n for n, _ in requested.assignments}
    extra = [f"{n}={v}" for n, v in got.items() if n not in requested_names]
    if extra:
        notes.append("added by TensorRT: " + " ".join(extra))
    if got_text.split() != want_text.split() and not notes:
        notes.append("same knobs, another order or spacing")
    return Readback(effective=got_text, differs=got_text != want_text, notes=tuple(notes))


def split_route(route: Route, own_prefix: str) -> tuple[Route, Route]:
    """Split into (TensorRT knobs, gptuner's own knobs named ``-<own_prefix>...``)."""
    own = tuple((n, v) for n, v in route.assignments if n.startswith(own_prefix))
    trt = tuple((n, v) for n, v in route.assignments if not n.startswith(own_prefix))
    return Route(trt), Route(own)
