"""Live progress: totals after a resume, the re-validation phase, the live chart."""

from __future__ import annotations

from gptuner_core import views


def test_progress_never_reads_12_of_8_after_resume() -> None:
    """Defect: progress read 12/8 after a resume."""
    p = views.live_progress({"done": 12, "total": 8, "phase": "build", "eta_s": 3})
    assert "12/8" not in p.text and p.text.startswith("12 routes (plan of 8 exceeded")
    # right after a resume the store already holds 12 candidates, the meta still the old 5
    p = views.live_progress({"done": 5, "total": 20}, n_recorded=12)
    assert p.text.startswith("12/20 routes")


def test_revalidation_phase_not_idle() -> None:
    """Defect: Live showed "Phase idle, ETA 0s" during minutes of re-validation."""
    names = ["r0_00000", "r0_00006", "r1_00000"]
    reval = views.revalidation_progress(names, top_k=3, rounds=5)
    assert reval == (3, 20)
    p = views.live_progress({"done": 8, "total": 8, "phase": "idle", "eta_s": 0}, status="running",
                            revalidation=reval)
    assert p.phase == "re-validation 3/20 measurements" and p.eta == "—"
    assert p.fraction == 3 / 20
    done = views.live_progress({"done": 8, "total": 8, "phase": "done", "eta_s": 0}, status="finished")
    assert done.phase == "done"


def test_a_study_that_did_not_finish_never_reads_phase_done() -> None:
    """Defect (the walk test's screenshot e2e-walk-4-stopped.png): a study stopped on request
    showed "status: stopped" beside "Phase done" and "ETA 0s", as the tuner reports "done" at
    every exit. The phase and the ETA follow the study's status."""
    meta = {"done": 1, "total": 6, "phase": "done", "eta_s": 0}
    for status in ("stopped", "interrupted", "failed"):
        p = views.live_progress(meta, status=status)
        assert p.phase == status and p.eta == "—", (status, p)
    assert views.live_progress(meta, status="finished").phase == "done"


def test_counts_say_what_landed_and_rounds_say_what_is_left() -> None:
    """Issue 39 item 10: "1 routes" before anything was measured, and "8/8 routes" beside a bar
    at 16 % with ETA "—" for ~75 s of re-validation."""
    assert views.live_progress({"done": 1, "total": None}).text == "1 route"
    assert views.live_progress({"done": 0, "total": None}).text.startswith("0 routes")
    p = views.live_progress({"done": 8, "total": 8, "phase": "revalidation", "rounds_done": 1,
                             "rounds_total": 6}, status="running")
    assert p.fraction == 1 / 6 and "round 1/6" in p.text and "8/8 routes screened" in p.text
    assert p.eta == "at most 5 rounds"


def test_a_candidate_in_flight_is_not_counted() -> None:
    """Issue 39 item 10: "2/10 routes" while only #0 had landed (the one in flight counted)."""
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import CandidateState

    recs = [CandidateRecord(number=0, requested_route="", state=CandidateState.COMPLETE),
            CandidateRecord(number=1, requested_route="-a=1", state=CandidateState.RUNNING)]
    assert views.landed(recs) == 1
