"""Validate a route ourselves before ``config.build_route = ...``, then read it back.

TensorRT's Python setter drops the ``bool`` that ``IBuilderConfig::setBuildRoute`` returns, so a
bad route silently leaves the config unchanged (reference §2.1). We therefore check every name and
value against the knob database first, and compare what the config reports afterwards.
"""

from __future__ import annotations

import re
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


def check_readback(requested: Route, readback: str | None) -> str:
    """Return the effective route reported by the config, or raise if TensorRT ignored ours.

    An empty request must read back as ``""``. A non-empty request must read back with the same set
    of ``-name=value`` tokens (order-insensitive).
    """
    got = normalize(readback or "")
    want = normalize(str(requested))
    if sorted(got.split()) == sorted(want.split()):
        return got
    msg = (
        "TensorRT did not accept the build route (the Python setter reports no error): "
        f"requested {want!r}, config.build_route reads back {got!r}; "
        "check the TensorRT log above for the reason"
    )
    raise BackendError(msg)


def split_route(route: Route, own_prefix: str) -> tuple[Route, Route]:
    """Split into (TensorRT knobs, gptuner's own knobs named ``-<own_prefix>...``)."""
    own = tuple((n, v) for n, v in route.assignments if n.startswith(own_prefix))
    trt = tuple((n, v) for n, v in route.assignments if not n.startswith(own_prefix))
    return Route(trt), Route(own)
