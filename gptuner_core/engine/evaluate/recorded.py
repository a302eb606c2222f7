"""Answers from a recording: the evaluator for replays, simulations and warm what-ifs.

One semantics, for ``gptuner replay`` (:func:`gptuner_core.engine.loop.simulate.simulate`) and for a
tuner run whose backend is ``replay`` (the model is the recording); each proposal is answered
by :meth:`Route.key`, deterministically, without spawning anything:

* a route missing from the recording is BUILD_FAILED and listed in
  :attr:`RecordedEvaluator.missing`: "route not in the recording" for a partial sweep, and
  "infeasible: ..." with ``extra["infeasible"] = True`` for an exhaustive recording
  (``Recording.exhaustive``: an imported Kernel Tuner / T4 space, where a configuration absent
  from the file is one the kernel's restrictions exclude). Either way it is a spent build, as an
  infeasible TensorRT route costs a build attempt;
* otherwise the recorded record is returned as this study's candidate (its state, accuracy
  verdict, latency, samples and speed-up as recorded);
* ``Proposal.build_timeout_factor`` answers TIMED_OUT when the recorded build time exceeds that
  many times the default route's;
* ``Proposal.measure_scale`` < 1 answers with the first ``ceil(scale × n)`` recorded samples (a
  shorter measurement of the same real run) and the speed-up of that prefix;
* a re-measurement (drift, racing, re-validation) returns the recorded samples of that route
  (a prefix for ``scale`` < 1), so re-validation decides on the recorded distributions.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import ChildResult
from gptuner_core.records import LatencyStats


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Sequence

    from gptuner_core.recording import Recording
    from gptuner_core.strategies import Proposal


def stats_of(samples: Sequence[float], like: LatencyStats) -> LatencyStats:
    """Latency statistics of a prefix of recorded samples."""
    import numpy as np

    a = np.asarray(samples, dtype=float)
    mean = float(a.mean())
    return LatencyStats(
        median_ms=float(np.median(a)), mean_ms=mean, min_ms=float(a.min()),
        p5_ms=float(np.percentile(a, 5)), p95_ms=float(np.percentile(a, 95)),
        p99_ms=float(np.percentile(a, 99)),
        cv=float(a.std(ddof=1) / mean) if a.size > 1 and mean > 0 else 0.0,
        ci_low_ms=float(a.min()), ci_high_ms=float(a.max()), n_samples=int(a.size),
        calls_per_sample=like.calls_per_sample, warmup_calls=like.warmup_calls,
        stop_reason="replayed prefix of the recorded samples",
    )


class RecordedEvaluator:
    """Answers proposals and re-measurements from a :class:`Recording`."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.index = recording.by_key
        self.base = recording.baseline
        self.missing: list[str] = []

    def lookup(self, route_text: str) -> CandidateRecord | None:
        return self.recording.lookup(route_text)

    def evaluate(
        self, proposal: Proposal, number: int, history: Sequence[CandidateRecord],
        artifacts: dict[str, int], on_phase: Callable[[str], None],
    ) -> CandidateRecord:
        route = str(proposal.route)
        found = self.lookup(route)
        info = dict(proposal.info)
        if found is None:
            self.missing.append(route)
            if self.recording.exhaustive:
                return CandidateRecord(
                    number=number, requested_route=route, state=CandidateState.BUILD_FAILED,
                    error=f"infeasible: the configuration is not in the recorded space "
                          f"{self.recording.source} (excluded by the kernel's restrictions)",
                    phase="build", strategy_info=info, extra={"infeasible": True},
                )
            return CandidateRecord(
                number=number, requested_route=route, state=CandidateState.BUILD_FAILED,
                error=f"route not in the recording {self.recording.source}", phase="build",
                strategy_info=info,
            )
        out = found.replace(number=number, requested_route=route, strategy_info=info,
                            duplicate_of=None if found.duplicate_of is None else found.duplicate_of)
        factor = proposal.build_timeout_factor
        base_build = self.base.build_time_s
        if factor and base_build and found.build_time_s is not None and found.build_time_s > factor * base_build:
            return out.replace(
                state=CandidateState.TIMED_OUT, latency=None, samples_ms=(), speedup=None,
                speedup_ci=None, phase="build",
                error=f"build exceeded {factor:g}x the default's build time ({base_build:.3g} s)",
            )
        if proposal.measure_scale < 1 and found.latency is not None and found.samples_ms:
            samples = self._prefix(found, proposal.measure_scale)
            stats = stats_of(samples, found.latency)
            out = out.replace(
                latency=stats, samples_ms=samples, speedup_ci=None,
                speedup=self.base.latency.median_ms / stats.median_ms,  # type: ignore[union-attr]
            )
        return out

    @staticmethod
    def _prefix(rec: CandidateRecord, scale: float) -> tuple[float, ...]:
        n = max(1, math.ceil(scale * len(rec.samples_ms)))
        return tuple(rec.samples_ms[:n])

    def remeasure(self, record: CandidateRecord, purpose: str, scale: float = 1.0) -> ChildResult:
        found = self.lookup(record.requested_route)
        if found is None or found.latency is None or not found.samples_ms:
            return ChildResult(state=CandidateState.CRASHED,
                               error=f"route not measured in the recording {self.recording.source}")
        samples = self._prefix(found, scale) if scale < 1 else tuple(found.samples_ms)
        latency = stats_of(samples, found.latency) if scale < 1 else found.latency
        return ChildResult(state=CandidateState.COMPLETE, latency=latency, samples_ms=samples,
                           telemetry={"replayed": True})
