"""The records of a sequential re-validation: plan, per-contender verdict, study result.

See :mod:`gptuner_core.measurement.sequential` for how they are computed. All are frozen, slotted,
keyword-only dataclasses with ``to_json``/``from_json``; :meth:`SequentialResult.winner_meta` is the
store's ``winner`` meta.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from dataclasses import field
from typing import Any

from gptuner_core.errors import ConfigError
from gptuner_core.measurement.boundaries import SPENDING
from gptuner_core.measurement.boundaries import look_rounds
from gptuner_core.measurement.paired import METHOD_TEXT
from gptuner_core.measurement.paired import METHODS
from gptuner_core.measurement.regimes import Regimes
from gptuner_core.measurement.stats import SpeedupEstimate


class Verdict(enum.StrEnum):
    """The study's answer: a faster route, no faster route, or not measured enough to tell."""

    WINNER = "winner"
    NOT_FASTER = "not_faster"
    INCONCLUSIVE = "inconclusive"


#: per-contender outcomes
STATUSES = ("winner", "not_faster", "outclassed", "inconclusive", "failed")


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True, slots=True, kw_only=True)
class SequentialPlan:
    """How a sequential re-validation decides and when it gives up.

    Attributes:
        min_effect: the smallest speed-up worth reporting (0.01 = 1 %).
        confidence: family-wise confidence of the intervals (false winners <= (1 - it) / 2).
        min_rounds: rounds before the first look (>= 2).
        max_rounds: the round budget; the last look is here.
        max_time_s: wall-clock budget of the whole re-validation (``None``: rounds only). A round
            is not started when the rounds so far say it would not finish in time.
        spending: ``"pocock"`` or ``"obrien-fleming"`` (see ``boundaries``).
        method: ``"auto"`` (same-regime rounds with the rank interval where regimes are detected,
            else t), ``"t"``, ``"rank"`` or ``"matched"``.
        look_growth: looks at ``min_rounds`` then each x``look_growth`` rounds, and ``max_rounds``.
        winner_floor: ``None`` (the default): a winner's whole interval lies above
            ``1 + min_effect``. A number in ``[0, min_effect]``: a winner's interval lies above
            ``1 + winner_floor`` *and* its point estimate above ``1 + min_effect`` ("significantly
            faster, by an estimated more than min_effect"), the regression gate's rule (0).
        stop_at_winner: stop at the first look with a winner (the default: the question is "is a
            route faster than the default?"), unless an undecided contender is not separated from
            the leading winner (it may tie with it): those two are measured on until it is decided
            or the rounds run out, the others are outclassed; ``False`` keeps measuring the
            undecided contenders until each is decided or outclassed by the winner (to be sure
            the winner is the best).
    """

    min_effect: float = 0.01
    confidence: float = 0.95
    min_rounds: int = 4
    max_rounds: int = 20
    max_time_s: float | None = None
    spending: str = "pocock"
    method: str = "auto"
    look_growth: float = 1.5
    winner_floor: float | None = None
    stop_at_winner: bool = True

    def __post_init__(self) -> None:
        if not (_num(self.min_effect) and 0 <= self.min_effect < 10):
            msg = f"min_effect must be a number >= 0, e.g. 0.01 for 1 % (got {self.min_effect!r})"
            raise ConfigError(msg)
        if not (_num(self.confidence) and 0 < self.confidence < 1):
            msg = f"confidence must be a number strictly between 0 and 1 (got {self.confidence!r})"
            raise ConfigError(msg)
        if self.max_time_s is not None and not (_num(self.max_time_s) and self.max_time_s > 0):
            msg = f"max_time_s must be a number of seconds > 0 or None (got {self.max_time_s!r})"
            raise ConfigError(msg)
        if self.spending not in SPENDING:
            msg = f"spending must be one of {list(SPENDING)} (got {self.spending!r})"
            raise ConfigError(msg)
        if self.method not in METHODS:
            msg = f"method must be one of {list(METHODS)} (got {self.method!r})"
            raise ConfigError(msg)
        look_rounds(self.min_rounds, self.max_rounds, self.look_growth)  # validates the rounds
        floor = self.winner_floor
        if floor is not None and not (_num(floor) and 0 <= floor <= self.min_effect):
            msg = (
                f"winner_floor must be None or a number from 0 to min_effect ({self.min_effect:g}) "
                f"(got {floor!r})"
            )
            raise ConfigError(msg)
        if not isinstance(self.stop_at_winner, bool):
            msg = f"stop_at_winner must be true or false (got {self.stop_at_winner!r})"
            raise ConfigError(msg)

    @property
    def looks(self) -> tuple[int, ...]:
        return look_rounds(self.min_rounds, self.max_rounds, self.look_growth)

    def to_json(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SequentialPlan:
        return cls(**data)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContenderVerdict:
    """One contender's outcome: status, interval at its last look, rounds measured, regimes."""

    number: int
    status: str
    estimate: SpeedupEstimate | None = None
    rounds: int = 0
    decided_at: int | None = None
    method: str = ""
    regimes: Regimes | None = None
    projected_rounds: int | None = None
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number, "status": self.status,
            "estimate": self.estimate.to_json() if self.estimate else None,
            "rounds": self.rounds, "decided_at": self.decided_at, "method": self.method,
            "regimes": self.regimes.to_json() if self.regimes else None,
            "projected_rounds": self.projected_rounds, "error": self.error,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ContenderVerdict:
        d = dict(data)
        d["estimate"] = SpeedupEstimate.from_json(d["estimate"]) if d.get("estimate") else None
        d["regimes"] = Regimes.from_json(d["regimes"]) if d.get("regimes") else None
        return cls(**d)


@dataclass(frozen=True, slots=True, kw_only=True)
class SequentialResult:
    """Outcome of :func:`revalidate_sequential` (frozen; ``to_json``/``from_json`` round-trip).

    Attributes:
        verdict: :class:`Verdict` of the study.
        winner: the winning candidate, else ``None``: the fastest winner, or, among winners the
            rounds do not separate from the fastest (``tied``), the first by the caller's order.
        tied: the other winners of that tie (empty when the winner stands alone).
        best: the contender with the highest point speed-up (``None`` when all failed).
        contenders: one :class:`ContenderVerdict` per contender, in the order given.
        rounds: rounds run; ``looks``: the rounds after which the data were examined.
        stop_reason: ``"decided"``, ``"max_rounds"`` or ``"max_time"``.
        projected_rounds: for an inconclusive study, the rounds that would decide every
            undecided contender (``None`` when a contender sits on the threshold).
        message: one plain sentence for the user.
    """

    verdict: Verdict
    winner: int | None
    best: int | None
    default: int
    contenders: tuple[ContenderVerdict, ...]
    rounds: int
    looks: tuple[int, ...]
    stop_reason: str
    plan: SequentialPlan
    message: str
    elapsed_s: float = 0.0
    projected_rounds: int | None = None
    tied: tuple[int, ...] = ()
    schedule: tuple[tuple[int, ...], ...] = ()
    round_medians: dict[int, tuple[float | None, ...]] = field(default_factory=dict)
    default_regimes: Regimes | None = None

    @property
    def method(self) -> str:
        used = sorted({c.method for c in self.contenders if c.method})
        stats = "; ".join(METHOD_TEXT[m] for m in used) or METHOD_TEXT["t"]
        k = len(self.contenders)
        return (
            f"sequential interleaved re-validation in fresh processes ({stats}; "
            f"{self.plan.spending} alpha spending over looks at rounds {list(self.looks)}"
            + (f", Bonferroni over {k} contenders" if k > 1 else "") + ")"
        )

    def contender(self, number: int) -> ContenderVerdict:
        return next(c for c in self.contenders if c.number == number)

    def winner_meta(self) -> dict[str, Any]:
        """The store's ``winner`` meta: number, speedup, ci, significant, message, best plus
        ``verdict``, ``rounds``, ``method``, ``confidence``, ``min_effect``, ``projected_rounds``."""
        won = self.winner is not None
        lead = self.winner if won else self.best  # a winner is its own best: one route, one number
        est = self.contender(lead).estimate if lead is not None else None
        return {
            "number": self.winner if won else self.default,
            "speedup": est.point if (est is not None and won) else 1.0,
            "ci": list(est.ci) if est is not None and est.ci is not None and won else None,
            "significant": won,
            "message": self.message,
            "best": lead,
            "best_speedup": est.point if est is not None else None,
            "best_ci": list(est.ci) if est is not None and est.ci is not None else None,
            "verdict": self.verdict.value,
            "rounds": self.rounds,
            "method": self.method,
            "confidence": self.plan.confidence,
            "min_effect": self.plan.min_effect,
            "projected_rounds": self.projected_rounds,
            "stop_reason": self.stop_reason,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value, "winner": self.winner, "best": self.best,
            "default": self.default, "contenders": [c.to_json() for c in self.contenders],
            "rounds": self.rounds, "looks": list(self.looks), "stop_reason": self.stop_reason,
            "plan": self.plan.to_json(), "message": self.message, "elapsed_s": self.elapsed_s,
            "projected_rounds": self.projected_rounds, "method": self.method,
            "tied": list(self.tied), "schedule": [list(r) for r in self.schedule],
            "round_medians": {str(k): list(v) for k, v in self.round_medians.items()},
            "default_regimes": self.default_regimes.to_json() if self.default_regimes else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SequentialResult:
        return cls(
            verdict=Verdict(data["verdict"]), winner=data["winner"], best=data["best"],
            default=data["default"],
            contenders=tuple(ContenderVerdict.from_json(c) for c in data["contenders"]),
            rounds=data["rounds"], looks=tuple(data["looks"]), stop_reason=data["stop_reason"],
            plan=SequentialPlan.from_json(data["plan"]), message=data["message"],
            elapsed_s=data.get("elapsed_s", 0.0), projected_rounds=data.get("projected_rounds"),
            tied=tuple(data.get("tied", ())), schedule=tuple(tuple(r) for r in data.get("schedule", ())),
            round_medians={int(k): tuple(v) for k, v in data.get("round_medians", {}).items()},
            default_regimes=(
                Regimes.from_json(data["default_regimes"]) if data.get("default_regimes") else None
            ),
        )
