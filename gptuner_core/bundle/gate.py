"""The regression gate: a candidate against a bundle's artifact, interleaved in fresh processes.

The question a pipeline asks is one-sided, "is the change slower than the baseline by more than
the practical threshold?", so the sequential re-validation (:func:`revalidate_sequential`) is
run with the *candidate* as its reference and the *baseline* as the contender: its speed-up is
then ``candidate latency / baseline latency`` (the slow-down), and its decisions map to

* winner (slow-down interval above 1, *and* its point estimate above ``1 + threshold``: the
  plan's ``winner_floor`` is 0): **regression** (exit 1) — significantly slower, by an estimated
  more than the practical threshold. Requiring the whole interval above ``1 + threshold``
  instead caught a real 10 % slow-down in 133 of 200 simulated gates (5 % process noise, the
  default 20 rounds); this rule catches it in 200 and keeps false regressions on an unchanged
  model within ``(1 - confidence) / 2`` (``tests/pipeline_tests/test_gate_decisions.py``);
* not faster (interval below ``1 + threshold``): no regression; **improvement** when the whole
  interval lies below ``1 / (1 + threshold)``, else **no change** (exit 0);
* inconclusive (round or time budget spent first): **inconclusive** (exit 3).

An accuracy failure of the candidate (the study's gate against the bundle's golden outputs) is
exit 1 before anything is timed; a fingerprint that differs in the fields that make timings
incomparable is refused (usage error, 2) unless ``allow_mismatch``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import BundleError
from gptuner_core.errors import GptunerError


if TYPE_CHECKING:
    from gptuner_core.bundle.manifest import Bundle
    from gptuner_core.measurement import SequentialPlan

#: fingerprint fields a gate ignores: the model (and the knob database derived from it) is
#: what a gate is asked to compare
CHANGES_BY_DESIGN = ("model_sha256", "knob_db_sha256")


class Decision(str, enum.Enum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    NO_CHANGE = "no_change"
    INCONCLUSIVE = "inconclusive"
    ACCURACY_FAILED = "accuracy_failed"
    FAILED = "failed"

    @property
    def exit_code(self) -> int:
        return {"regression": 1, "accuracy_failed": 1, "failed": 1, "inconclusive": 3}.get(self.value, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class GateSettings:
    threshold: float = 0.05
    confidence: float = 0.95
    min_rounds: int = 4
    max_rounds: int = 20
    max_time_s: float | None = None
    seed: int = 0
    allow_mismatch: bool = False
    lock_timeout_s: float | None = None  # wait for the measuring device (None: for ever)


@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    """The gate's decision with its evidence (written as JSON, JUnit XML and Markdown)."""

    decision: Decision
    message: str
    bundle: str
    candidate: str
    route: str
    threshold: float
    ratio: float | None = None  # candidate latency / baseline latency (point estimate)
    ci: tuple[float, float] | None = None
    confidence: float = 0.95
    rounds: int = 0
    baseline_ms: float | None = None
    candidate_ms: float | None = None
    accuracy: dict[str, Any] | None = None
    mismatches: tuple[tuple[str, str, str], ...] = ()
    method: str = ""
    notes: tuple[str, ...] = ()
    round_medians: dict[str, list[float | None]] = field(default_factory=dict)
    #: an undecided gate on a busy machine: the share of its measurements other programs ran
    #: beside (``None``: decided, or not too busy; see :func:`with_busy`)
    busy_share: float | None = None

    @property
    def exit_code(self) -> int:
        return self.decision.exit_code

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision.value, "exit_code": self.exit_code, "message": self.message,
            "bundle": self.bundle, "candidate": self.candidate, "route": self.route,
            "threshold": self.threshold, "ratio": self.ratio,
            "ci": list(self.ci) if self.ci else None, "confidence": self.confidence,
            "rounds": self.rounds, "baseline_ms": self.baseline_ms, "candidate_ms": self.candidate_ms,
            "accuracy": self.accuracy, "mismatches": [list(m) for m in self.mismatches],
            "method": self.method, "notes": list(self.notes), "round_medians": self.round_medians,
            "busy_share": self.busy_share,
        }


def incomparable(bundle: Bundle, current: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(field, baseline, now)`` for every fingerprint field that makes timings incomparable."""
    from gptuner_core.fingerprint import differences

    return [
        (k, str(a), str(b)) for k, a, b in differences(bundle.fingerprint, current)
        if k not in CHANGES_BY_DESIGN
    ]


def decide(estimate: Any, verdict: str, threshold: float) -> tuple[Decision, str]:
    """Map the sequential verdict (baseline as contender, see the module doc) to a decision."""
    if estimate is None:
        return Decision.INCONCLUSIVE, "the baseline could not be measured"
    lo, hi, point = estimate.low, estimate.high, estimate.point
    if lo is None or hi is None:
        return Decision.INCONCLUSIVE, f"inconclusive: too few rounds for an interval ({point:.3f}x the baseline's latency)"
    ci = f"{point:.3f}x the baseline's latency, {estimate.confidence:.0%} CI [{lo:.3f}, {hi:.3f}]"
    band = f"{threshold:.0%}"
    if verdict == "winner":
        return Decision.REGRESSION, (
            f"regression: the candidate is significantly slower, by an estimated {point - 1:.1%} "
            f"(more than the {band} threshold; {ci})"
        )
    if verdict == "not_faster":
        if hi is not None and hi < 1.0 / (1.0 + threshold):
            return Decision.IMPROVEMENT, f"improvement: the candidate is faster by more than {band} ({ci})"
        return Decision.NO_CHANGE, f"no regression beyond {band} ({ci})"
    return Decision.INCONCLUSIVE, (
        f"inconclusive: the interval neither rules out nor shows a slow-down beyond {band} ({ci})"
    )


def with_busy(decision: Decision, message: str, busy: list[bool]) -> tuple[str, float | None]:
    """``message`` and the busy share for an INCONCLUSIVE gate whose measurements ran beside
    other programs more than ``engine.decide.verdict.BUSY_SHARE`` of the time (``busy``: one flag per
    measurement): the line then says so, and what to do, first (issue 41: more rounds are the
    wrong advice there). Otherwise ``(message, None)``."""
    from gptuner_core.engine.decide.verdict import busy_share
    from gptuner_core.records.verdict_text import busy_words

    share = busy_share(busy) if decision is Decision.INCONCLUSIVE else None
    if share is None:
        return message, None
    rest = message.removeprefix("inconclusive: ")
    return f"inconclusive: {busy_words(share, 'the gate')}; {rest}", share


def gate_plan(settings: GateSettings) -> SequentialPlan:
    """The sequential plan of a gate's rounds (see the module doc for the rule)."""
    from gptuner_core.measurement import SequentialPlan

    return SequentialPlan(
        min_effect=settings.threshold, confidence=settings.confidence,
        min_rounds=min(settings.min_rounds, settings.max_rounds), max_rounds=settings.max_rounds,
        max_time_s=settings.max_time_s, winner_floor=0.0,
    )


def _median(samples: list[float]) -> float:
    import numpy as np

    return float(np.median(samples)) if samples else float("nan")


def run_gate(
    bundle: Bundle, config: Any, workdir: Path, settings: GateSettings, *,
    route: str | None = None, artifact: str | None = None, current_fingerprint: dict[str, Any],
    on_round: Any = None, on_wait: Any = None, dataset: Path | None = None, specs: list | None = None,
) -> GateResult:
    """Gate ``config.model`` (built with ``route``, default the bundle's) or ``artifact``."""
    from gptuner_core.bundle import measure as M
    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.device_lock import measuring_devices
    from gptuner_core.measurement import revalidate_sequential
    from gptuner_core.records import CandidateState

    shown_route = route if route is not None else bundle.route
    base = {"bundle": str(bundle.root), "candidate": artifact or str(config.model),
            "route": shown_route, "threshold": settings.threshold, "confidence": settings.confidence}
    mismatches = incomparable(bundle, current_fingerprint)
    if mismatches and not settings.allow_mismatch:
        fields = "; ".join(f"{k} (baseline: {_short(a)}, now: {_short(b)})" for k, a, b in mismatches)
        msg = (
            f"refusing to compare against bundle '{bundle.root}': the fingerprints differ in "
            f"{fields}; timings are not comparable (pass --allow-mismatch to compare anyway)"
        )
        raise BundleError(msg)
    device = "cpu" if bundle.backend == "onnxruntime" else "cuda"
    with DeviceLock(measuring_devices(device), study=str(workdir)).held(
        timeout=settings.lock_timeout_s, on_wait=on_wait,
    ):
        pair = M.prepare(bundle, config, workdir, route=route, artifact=artifact, dataset=dataset, specs=specs)
        rec = pair.candidate
        accuracy = rec.accuracy.to_json() if rec.accuracy else None
        if rec.state is CandidateState.ACCURACY_FAILED:
            return GateResult(decision=Decision.ACCURACY_FAILED, accuracy=accuracy,
                              mismatches=tuple(mismatches),
                              message=f"accuracy gate failed: {rec.error}", **base)
        if rec.state is not CandidateState.COMPLETE:
            return GateResult(decision=Decision.FAILED, mismatches=tuple(mismatches),
                              message=f"the candidate could not be built or run ({rec.state.value}): {rec.error}", **base)
        plan = gate_plan(settings)
        busy: list[bool] = []
        try:
            res = revalidate_sequential(
                [M.BASELINE], M.CANDIDATE, lambda n, r: M.measure_fresh(pair, n, r, busy), plan,
                seed=settings.seed, on_round=on_round,
            )
        except GptunerError as exc:
            return GateResult(decision=Decision.FAILED, accuracy=accuracy, mismatches=tuple(mismatches),
                              message=f"the candidate could not be measured: {exc}", **base)
    contender = res.contenders[0]
    decision, message = decide(contender.estimate, res.verdict.value, settings.threshold)
    if contender.status == "failed":
        decision, message = Decision.INCONCLUSIVE, f"inconclusive: the baseline could not be measured ({contender.error})"
    message, busy_share = with_busy(decision, message, busy)
    est = contender.estimate
    medians = {("candidate" if k == M.CANDIDATE else "baseline"): list(v) for k, v in res.round_medians.items()}
    return GateResult(
        decision=decision, message=message, ratio=est.point if est else None,
        ci=(est.low, est.high) if est and est.low is not None and est.high is not None else None,
        rounds=res.rounds, accuracy=accuracy, mismatches=tuple(mismatches), method=res.message,
        baseline_ms=_median([m for m in medians.get("baseline", []) if m is not None]),
        candidate_ms=_median([m for m in medians.get("candidate", []) if m is not None]),
        notes=_notes(bundle, artifact), round_medians=medians, busy_share=busy_share, **{**base, "confidence": est.confidence if est else settings.confidence},
    )


def _notes(bundle: Any, artifact: str | None) -> tuple[str, ...]:
    """What the gate's outputs say beside the decision: an artifact's unchecked accuracy, and
    a tie the study named this route in (issue 38: the route is one of several as fast)."""
    notes = ["accuracy not checked: --artifact gives an artifact, not outputs"] if artifact else []
    tie = (bundle.winner or {}).get("tie")
    if tie:
        notes.append(f"the study named this route among tied finalists: {tie}")
    return tuple(notes)


def _short(value: str) -> str:
    return value if len(value) <= 40 else value[:16] + "…" + value[-16:]
