"""A GPU study's bounds against its wall (issue 38 item 3), for ``gpu_study.py``'s rows.

* :func:`limit_s`: what no scheduling can beat on the machine, as the issue defines it;
* :func:`floor_s`: what the study cannot go under with its work per candidate, every other
  second removed.
"""

from __future__ import annotations


def limit_s(recs, rounds, workers: int) -> dict:
    """The study's limit: max(build CPU seconds / build workers, screening measurement seconds)
    + re-validation measurement seconds (what no scheduling can beat on this machine)."""
    build = sum(r.build_time_s or 0.0 for r in recs)
    screen = sum(r.measure_time_s or 0.0 for r in recs)
    reval = sum(float(r.get("measure", 0.0)) for r in rounds)
    return {"limit_s": round(max(build / max(workers, 1), screen) + reval, 1),
            "limit_parts": {"build_cpu_s": round(build, 1), "build_workers": workers,
                            "screening_measure_s": round(screen, 1), "revalidation_measure_s": round(reval, 1)}}


def floor_s(row: dict) -> dict:
    """The floor of a ``gpu_study.py`` row: the fork server's imports (``startup``: its first
    step to the end of Inductor's; not counted in rows without the trace), the first build (the
    candidates build together), one candidate's accuracy outputs (all at once, on the shared
    device), every candidate's samples and profile (one at a time on the device) and the
    rounds' measured seconds."""
    tl, startup = row.get("timeline") or {}, row.get("startup") or []
    server = [s for s in startup if s[0] == "fork server"]
    inductor = [s for s in server if s[1] == "torch._inductor.compile_fx"]
    imports = inductor[0][3] - server[0][2] if inductor else None  # None: not traced, not counted
    builds, outputs, device = [], [], 0.0
    for name, events in tl.items():
        if name.startswith("r"):
            continue
        marks = {e[0]: e[1] for e in events if isinstance(e[1], (int, float))}
        steps = next((e[1] for e in events if e[0] == "steps"), {})
        built = marks.get("wait", marks.get("measure"))  # overlap: waits for its turn; else measures
        if "build" in marks and built is not None:
            builds.append(built - marks["build"])
        if "outputs" in steps:
            outputs.append(steps["outputs"])
        device += steps.get("samples", 0.0) + steps.get("profile", 0.0)
    first_build, least_outputs = min(builds, default=0.0), min(outputs, default=0.0)
    rounds = sum(r.get("measure", 0.0) for r in row.get("rounds") or [])
    floor = (imports or 0.0) + first_build + least_outputs + device + rounds
    return {"floor_s": round(floor, 1),
            "floor_parts": {"imports_s": None if imports is None else round(imports, 2),
                            "first_build_s": round(first_build, 2), "outputs_s": round(least_outputs, 2),
                            "samples_and_profiles_s": round(device, 2), "rounds_measured_s": round(rounds, 2)}}
