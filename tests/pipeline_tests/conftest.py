"""A real study on the bundled mlp_digits sample (ONNX Runtime, real processes, real SQLite),
tuned once per session, and its baseline bundle."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


sys.path.insert(0, str(Path(__file__).parent))

from models import SAMPLE  # noqa: E402
from models import subset  # noqa: E402


#: small measurement settings: every process measures for 0.2 s at most
QUICK = ["max_time_s=0.2", "min_samples=10", "max_samples=200", "warmup_s=0.01"]
#: one thread per session: the other core's load does not shift the per-process medians
ROUTE = "-ort:intra_op_num_threads=1"
SPIN = "-ort:config:session.intra_op.allow_spinning"


def measure_args() -> list[str]:
    return [a for opt in QUICK for a in ("--measure-option", opt)]


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return subset(tmp_path_factory.mktemp("data") / "digits64.npz", 64)


@pytest.fixture(scope="session")
def study(tmp_path_factory: pytest.TempPathFactory, dataset: Path) -> Path:
    from gptuner_core.cli import main

    path = tmp_path_factory.mktemp("pipeline") / "study"
    rc = main([
        "tune", str(SAMPLE), "--dataset", str(dataset), "--batch-size", "16", "--epsilon", "1e-4",
        "--backend", "onnxruntime", "--expr", f"{ROUTE} {SPIN}=[1|0]", "--study", str(path),
        *measure_args(), "--revalidate-rounds", "4", "--profile-runs", "0", "--quiet",
    ])
    assert rc == 0
    return path


@pytest.fixture(scope="session")
def bundle(tmp_path_factory: pytest.TempPathFactory, study: Path) -> Path:
    from gptuner_core.cli import main

    out = tmp_path_factory.mktemp("bundle") / "baseline"
    assert main(["bundle", str(study), "-o", str(out)]) == 0
    return out
