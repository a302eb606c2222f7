"""The strategy contract: ask for the next route, be told how it went.

A strategy never imports a backend and never touches hardware: the tuner asks it for a
:class:`Proposal`, runs the candidate in an isolated process, stores the record and tells the
strategy. Contract (checked by ``tests/strategies_tests``):

* the first proposal is the default route of the space (baseline, 1.0x);
* a route whose :meth:`Route.key` was already evaluated in the study is never proposed again
  (``history`` holds every record of the study, including those of an earlier, resumed run);
* ``ask`` returns ``None`` when the strategy is done; the tuner enforces budgets on top.

Options are declared as data (``options``: name -> :class:`StrategyOption`) and validated with a
message listing the allowed names; the same declaration drives CLI help and the dashboard form.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

from gptuner_core.errors import StrategyError


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.expressions import Expression
    from gptuner_core.records import CandidateRecord
    from gptuner_core.routes import Route


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyOption:
    description: str
    default: Any
    type: type = str
    choices: tuple[Any, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Proposal:
    """A route to evaluate, with hints for the tuner.

    ``info`` is stored with the candidate (e.g. ``{"phase": 2}``). ``measure_scale`` scales the
    measurement budget (racing strategies measure briefly first, then longer for contenders).
    ``build_timeout_factor`` kills builds slower than that many times the default's build time.
    """

    route: Route
    info: dict[str, Any] = field(default_factory=dict)
    measure_scale: float = 1.0
    build_timeout_factor: float | None = None


def validate_options(
    name: str, declared: dict[str, StrategyOption], given: dict[str, Any]
) -> dict[str, Any]:
    """Fill defaults, coerce types, reject unknown names and values outside ``choices``."""
    unknown = sorted(set(given) - set(declared))
    if unknown:
        msg = (
            f"unknown option(s) {unknown} for strategy '{name}' "
            f"(allowed: {sorted(declared) or 'none'})"
        )
        raise StrategyError(msg)
    out: dict[str, Any] = {}
    for key, opt in declared.items():
        value = given.get(key, opt.default)
        if value is not None and not isinstance(value, opt.type):
            try:
                value = (
                    value.lower() in ("1", "true", "yes", "on")
                    if opt.type is bool and isinstance(value, str)
                    else opt.type(value)
                )
            except (TypeError, ValueError):
                msg = (
                    f"strategy '{name}' option '{key}' must be {opt.type.__name__} "
                    f"(got {value!r})"
                )
                raise StrategyError(msg) from None
        if opt.choices is not None and value not in opt.choices:
            msg = (
                f"strategy '{name}' option '{key}' must be one of {list(opt.choices)} "
                f"(got {value!r})"
            )
            raise StrategyError(msg)
        out[key] = value
    return out


class Strategy(abc.ABC):
    """Base class: subclasses set ``name``, ``summary``, ``options`` and implement ``ask``."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    options: ClassVar[dict[str, StrategyOption]] = {}

    def __init__(self, space: Expression, *, seed: int = 0, **options: Any) -> None:
        self.space = space
        self.seed = seed
        self.opts = validate_options(self.name, self.options, options)

    @abc.abstractmethod
    def ask(self, history: Sequence[CandidateRecord]) -> Proposal | None:
        """Next route to evaluate, or ``None`` when done."""

    def tell(self, record: CandidateRecord) -> None:  # noqa: B027 - optional hook
        """Called with every finished record, in order."""

    def planned(self) -> int | None:
        """How many candidates this strategy intends to evaluate, if known (for progress/ETA)."""
        return None
