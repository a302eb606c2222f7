"""Private loader for the benchmarks: a Kernel Tuner cache (``NAME.json.gz``) as a Recording.

Stand-in for ``gptuner import --format kerneltuner`` (issue 28 item 1, another branch) so that
search can be measured now: every tunable parameter with more than one value is a knob
``-kt:NAME=[v1|v2|…]`` whose default is its first listed value; a measured configuration is a
COMPLETE record (samples = the raw runtimes); a non-numeric ``time`` is BUILD_FAILED; a
configuration absent from the cache is absent from the recording (the replay answers it
BUILD_FAILED: infeasible).
"""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

from gptuner_core.expressions import Expression
from gptuner_core.knobs import KnobDatabase
from gptuner_core.recording import Recording
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.routes import Route


DATA = Path("/work/shared/data/kerneltuner")
SPACES = ("convolution_milo_A100", "convolution_milo_A4000", "convolution_milo_A6000",
          "dedispersion_milo_A100", "dedispersion_milo_A4000", "pnpoly_RTX_3090")


def _stats(times: list[float]) -> LatencyStats:
    med = statistics.median(times)
    return LatencyStats(median_ms=med, mean_ms=statistics.fmean(times), min_ms=min(times),
                        p5_ms=min(times), p95_ms=max(times), p99_ms=max(times), cv=0.0,
                        ci_low_ms=min(times), ci_high_ms=max(times), n_samples=len(times))


def load_kt(name: str | Path, fixed: int = 0) -> Recording:
    """``convolution_milo_A100`` (under the shared folder) or a path to a ``.json.gz`` cache.

    ``fixed``: the last ``fixed`` tunable parameters are held at their first listed value (a
    smaller space of the same kernel: fewer knobs tuned)."""
    path = Path(name)
    if not path.exists():
        path = DATA / f"{name}.json.gz"
    doc = json.load(gzip.open(path))
    params = {k: v for k, v in doc["tune_params"].items() if len(v) > 1}
    held = {k: v[0] for k, v in list(params.items())[len(params) - fixed:]} if fixed else {}
    params = {k: v for k, v in params.items() if k not in held}
    doc["cache"] = {c: e for c, e in doc["cache"].items()
                    if all(e[k] == v for k, v in held.items())}
    options = [{"option": f"-kt:{k}", "allowed_values": f"-kt:{k}=[{'|'.join(map(str, v))}]",
                "default_value": str(v[0]), "help": ""} for k, v in params.items()]
    db = KnobDatabase.from_json({"tuner_version": f"kerneltuner:{doc['kernel_name']}",
                                 "tuner_options": options})
    text = " ".join(f"-kt:{k}=[{'|'.join(map(str, v))}]" for k, v in params.items())
    expr = Expression.parse(text, db)
    records = []
    for i, entry in enumerate(doc["cache"].values()):
        route = " ".join(f"-kt:{k}={entry[k]}" for k in params)
        build = float(entry.get("compile_time") or 0.0) / 1000.0
        times = entry.get("times")
        if isinstance(entry.get("time"), (int, float)) and times:
            rec = CandidateRecord(number=i + 1, requested_route=route, state=CandidateState.COMPLETE,
                                  latency=_stats(times), samples_ms=tuple(times), build_time_s=build)
        else:
            rec = CandidateRecord(number=i + 1, requested_route=route,
                                  state=CandidateState.BUILD_FAILED, error=str(entry.get("time")),
                                  phase="build", build_time_s=build)
        records.append(rec)
    base = str(expr.baseline())
    if not any(Route.parse(r.requested_route).key(db) == Route.parse(base).key(db) and r.eligible
               for r in records):  # a baseline is needed to define 1.0x: use the first measured
        first = next(r for r in records if r.eligible)
        defaults = dict(Route.parse(first.requested_route).assignments)
        options = [{**o, "default_value": defaults[o["option"]]} for o in options]
        db = KnobDatabase.from_json({"tuner_version": f"kerneltuner:{doc['kernel_name']}",
                                     "tuner_options": options})
        expr = Expression.parse(text, db)
    return Recording(source=str(path), db=db, expression=expr, search="full",
                     records=tuple(records), config={"expression": text, "space": "exhaustive"})
