"""Which pool a :class:`~gptuner_core.engine.scale.scale_out.ScaleOut` asks for (Ray imported only
when asked for)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.engine.scale.scale_out import default_build_workers


if TYPE_CHECKING:
    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.engine.scale.scale_out import CandidatePool
    from gptuner_core.engine.scale.scale_out import ScaleOut


def make_pool(
    scale: ScaleOut | None, evaluator: Evaluator, *, device_lock: DeviceLock | None = None,
) -> CandidatePool | None:
    """The pool ``scale`` asks for, or ``None`` for today's one-at-a-time loop.

    ``device_lock``: held around each measurement when building ahead (leave it out when the
    caller already holds the study's lock for the whole run: a second flock of the same device
    in one process would wait for itself)."""
    if scale is None:
        return None
    scale = scale.validated()
    if scale.ray is not None:
        from gptuner_core.engine.scale.ray_workers import RayPool

        return RayPool(scale, evaluator)
    workers = scale.build_workers or default_build_workers()
    if workers <= 1:
        return None
    from gptuner_core.engine.scale.build_ahead import BuildAheadPool

    return BuildAheadPool(evaluator, workers, lock=device_lock)


