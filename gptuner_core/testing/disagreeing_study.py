"""A finished study whose screening and verdict disagree, written through the real store API and
decided by the real sequential re-validation, for the "one number on every surface" tests.

Screening (the synthetic study's one process per route) ranks some route well above the default;
re-validation in interleaved rounds, whose per-process medians swing between processes as a busy
machine's do (the issue's "default's median ranged 5.3-118 ms"), finds the leading route only
about 1.03x and cannot decide: the verdict is "no winner: keeping the default".
"""

from __future__ import annotations

import time
from pathlib import Path

from gptuner_core.records import Progress
from gptuner_core.records import Winner
from gptuner_core.testing.synthetic_study import write_synthetic_study


def write_disagreeing_study(study_dir: str | Path, *, n: int = 24, rounds: int = 8) -> Winner:
    """Create ``study_dir``; return the stored :class:`Winner` (inconclusive, default kept)."""
    import numpy as np

    from gptuner_core.engine.decide import verdict
    from gptuner_core.measurement import SequentialPlan
    from gptuner_core.measurement import revalidate_sequential
    from gptuner_core.storage import open_store

    study = write_synthetic_study(study_dir, n, seed=1, write_logs=False)
    with open_store(study) as store:
        history = store.candidates(with_samples=False)
        top = [r.number for r in verdict.contenders(history)[:2]]
        true = {0: 1.0, top[0]: 1 / 1.03, top[1]: 1 / 0.99}

        def measure_fresh(number: int, round_index: int) -> list[float]:
            rng = np.random.default_rng(1000 * round_index + number)
            swing = float(rng.lognormal(0.0, 0.2))  # process-to-process variation
            return list(true[number] * swing * rng.normal(1.0, 0.01, 20).clip(0.5))

        plan = SequentialPlan(min_effect=0.01, min_rounds=4, max_rounds=rounds)
        result = revalidate_sequential(top, 0, measure_fresh, plan, seed=0)
        winner = verdict.from_sequential(result)
        store.add_event("revalidation", result.to_json())
        store.set_winner(winner)
        store.set_status(store.status(), f"candidate budget reached ({n}); {winner.headline()}")
        now = time.time()
        store.set_progress(Progress(done=n, total=n, phase="done", best_speedup=winner.speedup,
                                    eta_s=0.0, started_at=now - 60, finished_at=now, heartbeat=now,
                                    rounds_done=result.rounds, rounds_total=rounds, elapsed_s=60.0))
    return winner
