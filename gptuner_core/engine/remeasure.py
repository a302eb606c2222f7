"""Re-measuring existing candidates in fresh processes: drift sentinel and racing.

(Interleaved re-validation of the top candidates lives in ``tuner_steps.revalidate_winner``.)
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.engine.isolation import run_isolated
from gptuner_core.engine.steps import with_speedup
from gptuner_core.records import LatencyStats


if TYPE_CHECKING:
    from gptuner_core.engine.tuner import Tuner
    from gptuner_core.records import CandidateRecord
    from gptuner_core.storage import StudyStore
    from gptuner_core.strategies._base import Proposal

CANDIDATES = "candidates"


def latency_of(res: dict[str, Any]) -> LatencyStats | None:
    """The latency summary of a child's result, if it measured."""
    return LatencyStats.from_json(res["latency"]) if res.get("latency") else None


def remeasure(tuner: Tuner, rec: CandidateRecord, workdir: Path, scale: float = 1.0) -> dict[str, Any] | None:
    """Measure an existing candidate again in a fresh process; ``None`` if that failed."""
    job = tuner.job(
        rec.requested_route, artifact=rec.artifact_path, effective_route=rec.effective_route,
        info=rec.extra.get("info", {}), measure_scale=scale,
    )
    outcome = run_isolated(
        "gptuner_core.engine.child:remeasure", job, workdir,
        timeouts={"start": tuner.config.build_timeout_s, "build": tuner.config.build_timeout_s,
                  "measure": tuner.config.measure_timeout_s},
    )
    return outcome.result if outcome.status == "ok" else None


def drift_sentinel(tuner: Tuner, store: StudyStore, history: list[CandidateRecord]) -> None:
    """Every ``drift_every`` candidates, re-measure the default route and store a baseline."""
    every = tuner.config.drift_every
    if not every or len(history) < 2 or (len(history) - 1) % every:
        return
    default = history[0]
    res = remeasure(tuner, default, tuner.dir / "baselines" / f"{len(history):05d}")
    if res is not None:
        store.add_event("baseline", {
            "after_candidate": history[-1].number, "time": time.time(),
            "median_ms": res["latency"]["median_ms"], "cv": res["latency"]["cv"],
            "telemetry": res.get("telemetry", {}),
        })


def race_remeasure(
    tuner: Tuner, store: StudyStore, strategy: Any, history: list[CandidateRecord],
    proposal: Proposal, number: int,
) -> None:
    """A racing strategy's longer measurement of a contender; updates that candidate in place."""
    idx = next((i for i, r in enumerate(history) if r.number == number), None)
    if idx is None:
        return
    if not history[idx].eligible:
        strategy.tell(history[idx])
        return
    rec = store.candidate(number) or history[idx]
    wd = tuner.dir / CANDIDATES / f"{number:05d}" / f"rung{proposal.info.get('race_rung', 1)}"
    res = remeasure(tuner, rec, wd, proposal.measure_scale)
    if res is not None:
        rec = rec.replace(
            latency=latency_of(res), samples_ms=tuple(res["samples_ms"]),
            telemetry=res.get("telemetry", {}),
            strategy_info={**rec.strategy_info, **proposal.info},
        )
        rec = with_speedup(rec, history)
        store.put_candidate(rec)
    history[idx] = rec if number == 0 else rec.replace(samples_ms=())
    strategy.tell(history[idx])
