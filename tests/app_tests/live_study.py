"""A real detached tuner on a quick faulty-backend study, for the Live page's tests (AppTest and
headless Chromium): launched as the dashboard launches it, stopped and resumed for real."""

from __future__ import annotations

import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from engine_tests.conftest import make_tiny_model  # noqa: E402
from engine_tests.conftest import wait_for  # noqa: E402


FAULTY = "gptuner_core.testing.faulty_backend:FaultyBackend"
QUICK = {"warmup_s": 0.01, "warmup_calls": 2, "min_samples": 10, "max_samples": 40, "max_time_s": 0.3}


def wait(predicate, timeout: float = 120.0) -> bool:
    return wait_for(predicate, timeout, poll_s=0.3)


def status(study: Path) -> tuple[str | None, int]:
    """The store's status and its number of candidates (``None, 0`` before it exists)."""
    from gptuner_core.storage import open_store

    try:
        with open_store(study, readonly=True) as store:
            return store.get_meta("status"), len(store.candidates())
    except Exception:  # noqa: BLE001 - not created yet
        return None, 0


def launch_faulty(tmp_path: Path, study: Path, expression: str) -> None:
    """Launch a study of ``expression`` on the faulty backend (a tiny ONNX model, 8 inputs) and
    wait for its first candidate."""
    import numpy as np

    from gptuner_core.config import StudyConfig
    from gptuner_core.dashboard import launch

    model = make_tiny_model(tmp_path / "tiny.onnx")
    np.savez(tmp_path / "ds.npz", x=np.zeros((8, 16), np.float32))
    config = StudyConfig(
        model=str(model), backend=FAULTY, search="full", expression=expression,
        dataset=str(tmp_path / "ds.npz"), batch_size=4, epsilon=1e-3, revalidate_top_k=0,
        drift_every=0, measurement=dict(QUICK),
    )
    launch.launch(config, study)
    assert wait(lambda: status(study)[1] >= 1), (study / "tuner.log").read_text()
