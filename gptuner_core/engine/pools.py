"""Which pool a :class:`~gptuner_core.engine.scale_out.ScaleOut` asks for (Ray imported only
when asked for)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.engine.scale_out import default_build_workers


if TYPE_CHECKING:
    from gptuner_core.engine.evaluator import Evaluator
    from gptuner_core.engine.scale_out import CandidatePool
    from gptuner_core.engine.scale_out import ScaleOut


def make_pool(scale: ScaleOut | None, evaluator: Evaluator) -> CandidatePool | None:
    """The pool ``scale`` asks for, or ``None`` for today's one-at-a-time loop."""
    if scale is None:
        return None
    scale = scale.validated()
    if scale.ray is not None:
        from gptuner_core.engine.ray_workers import RayPool

        return RayPool(scale, evaluator)
    workers = scale.build_workers or default_build_workers()
    if workers <= 1:
        return None
    from gptuner_core.engine.build_ahead import BuildAheadPool

    return BuildAheadPool(evaluator, workers)


