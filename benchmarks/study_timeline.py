"""Where a study's wall time went: one JSON line per candidate, then its re-validation.

Per candidate: seconds from the study's first start to its start and end, its build time, the
instants of its device turn (``timeline``: queued, build_start, measure_start, measure_end; with
build ahead) and its phases (``start`` is request to the child's first phase: the fork or the
interpreter, and any wait for the fork server). Then the re-validation event's verdict, rounds
and seconds per round. It asserts nothing::

    python3 benchmarks/study_timeline.py /tmp/gs/new /tmp/gs/old
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def timeline(study: str) -> list[dict]:
    from gptuner_core.storage import open_store

    rows = []
    with open_store(study, readonly=True) as store:
        recs = store.candidates()
        started = [r.started_at for r in recs if r.started_at]
        t0 = min(started) if started else 0.0
        for r in recs:
            rows.append({
                "study": study, "n": r.number, "route": r.requested_route, "state": r.state.value,
                "start": round((r.started_at or t0) - t0, 2), "end": round((r.finished_at or t0) - t0, 2),
                "build_s": r.build_time_s,
                "timeline": {k: round(v - t0, 2) for k, v in (r.extra.get("timeline") or {}).items()},
                "phases": {k: round(v, 2) for k, v in (r.extra.get("phase_times") or {}).items()},
            })
        for e in store.events("revalidation"):
            rows.append({"study": study, "revalidation": {
                k: e.payload.get(k) for k in ("verdict", "rounds", "round_times")}})
    return rows


def main(argv: list[str] | None = None) -> int:
    for study in (sys.argv[1:] if argv is None else argv):
        for row in timeline(study):
            print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
