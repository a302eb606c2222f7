"""Synthetic recordings for the strategy tests: a product of knobs and what each route gives."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from gptuner_core.expressions import Expression
from gptuner_core.knobs import KnobDatabase
from gptuner_core.recording import Recording
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats


if TYPE_CHECKING:
    from collections.abc import Callable


def synthetic_recording(knobs: dict[str, list[str]],
                        outcome: Callable[[int, tuple[str, ...]], float | bool | None]) -> Recording:
    """An exhaustive recording of every route of ``knobs`` (the first value of each is its
    default). ``outcome(n, values)`` for route number ``n``: a latency in ms, ``False`` (the
    build fails) or ``None`` (infeasible: absent from the recording)."""
    options = [{"option": k, "allowed_values": f"{k}=[{'|'.join(v)}]", "default_value": v[0],
                "help": ""} for k, v in knobs.items()]
    db = KnobDatabase.from_json({"tuner_version": "synthetic", "tuner_options": options})
    text = " ".join(f"{k}=[{'|'.join(v)}]" for k, v in knobs.items())
    records = []
    for n, values in enumerate(itertools.product(*knobs.values())):
        got = outcome(n, values)
        if got is None:
            continue
        route = " ".join(f"{k}={v}" for k, v in zip(knobs, values, strict=True))
        if got is False:
            records.append(CandidateRecord(number=n + 1, requested_route=route,
                                           state=CandidateState.BUILD_FAILED, error="synthetic"))
            continue
        ms = float(got)
        stats = LatencyStats(median_ms=ms, mean_ms=ms, min_ms=ms, p5_ms=ms, p95_ms=ms, p99_ms=ms,
                             cv=0.0, ci_low_ms=ms, ci_high_ms=ms, n_samples=1)
        records.append(CandidateRecord(number=n + 1, requested_route=route,
                                       state=CandidateState.COMPLETE, latency=stats,
                                       samples_ms=(ms,)))
    return Recording(source="synthetic", db=db, expression=Expression.parse(text, db),
                     search="full", records=tuple(records),
                     config={"expression": text, "space": "exhaustive"})
