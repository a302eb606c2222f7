"""``child.build_route``: a backend that compiles for static shapes builds for the study's batch."""

from __future__ import annotations

from pathlib import Path

from gptuner_core.engine.process.child import build_route
from gptuner_core.records import ChildJob


class _Builds:
    """Records what ``build`` was given (the child's call is under test, not a backend)."""

    compiles_for_batch = False

    def __init__(self) -> None:
        self.kwargs: dict = {}

    def build(self, model, route, out, **kwargs):  # noqa: ANN001, ANN201
        self.kwargs = kwargs
        return out


class _Static(_Builds):
    compiles_for_batch = True


def test_the_studys_batch_goes_to_a_backend_that_compiles_for_it_and_no_other(tmp_path):
    job = ChildJob(backend="x", model="m.py", route="", inputs="", batch_size=16)
    static, other = _Static(), _Builds()
    assert build_route(static, job, tmp_path / "a") == Path(tmp_path / "a")
    assert static.kwargs == {"calibration": None, "batch_size": 16}
    build_route(other, job, tmp_path / "b")
    assert other.kwargs == {"calibration": None}  # a plug-in's build() as it always was
