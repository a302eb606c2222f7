"""Build ahead on one device: the next proposals build while one candidate is measured.

Each candidate runs in a daemon thread of the coordinator as two fresh isolated processes
(``IsolatedEvaluator.evaluate(..., gate=...)``): ``build_only`` under the gate's build side (at
most ``build_workers`` at once), then the rest of the candidate (outputs, gate, task metric,
measurement, profile) under its measuring side: one measurement at a time, never overlapped by a
build that touches the device (``Backend.route_uses_device``, asked per route before its build;
see ``engine.scale.device_gate``). The cores are shared out: each build gets cores / (builds + 1)
Inductor compile workers (``TORCHINDUCTOR_COMPILE_THREADS``, unless set), so builds next to a
measurement leave its CPU thread a core. With overlap on (``engine.scale.overlap``: torch on a GPU
by default) a candidate is one process that builds, waits for the device and measures what it
built; the builds then share cores - 2 (the measuring process is pinned to the other two). The
coordinator alone writes the store (``engine.scale.parallel``).

Candidates do not wait for the default route (candidate 0) to start building: they build beside
it and measure once it was committed (``DeviceGate.default_done``), so its build is not a phase
of its own (``builds_before_default``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from gptuner_core.engine.scale.device_gate import DeviceGate
from gptuner_core.engine.scale.overlap import core_split
from gptuner_core.engine.scale.overlap import overlap_enabled
from gptuner_core.engine.scale.scale_out import run_in_thread


if TYPE_CHECKING:
    import contextlib
    from collections.abc import Callable
    from collections.abc import Sequence
    from concurrent.futures import Future

    from gptuner_core.device_lock import DeviceLock
    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.records import CandidateRecord
    from gptuner_core.strategies import Proposal


def build_uses_device(backend: str, options: dict | None = None) -> bool:
    """Whether ``backend``'s build touches its measuring device (class attribute of the backend;
    an unknown or unloadable backend counts as touching it)."""
    from gptuner_core.backends import load_backend

    try:
        return bool(load_backend(backend, options or {}).build_uses_device)
    except Exception:  # noqa: BLE001 - the safe answer: never overlap its measurements
        return True


class RouteDeviceUse:
    """Per route, whether its build touches the measuring device (``Backend.route_uses_device``,
    asked in the coordinator before the build starts), and where its round processes load
    (:meth:`round_loading`). The backend is loaded once for every question. Any failure to
    answer gives the safe answer: touching the device (never overlapped with a measurement), not
    side by side (each loads alone)."""

    def __init__(self, backend: str, options: dict | None = None) -> None:
        from gptuner_core.backends import load_backend

        try:
            self._backend = load_backend(backend, options or {})
        except Exception:  # noqa: BLE001 - unloadable: every build counts as using the device
            self._backend = None

    def _ask(self, question: str, route: object, safe: bool) -> bool:
        if self._backend is None:
            return safe
        try:
            return bool(getattr(self._backend, question)(route))
        except Exception:  # noqa: BLE001 - the safe answer
            return safe

    def __call__(self, route: object) -> bool:
        return self._ask("route_uses_device", route, True)

    def round_loading(self, route: object) -> str:
        """``"ahead"``: loading ``route``'s build leaves the device alone
        (``Backend.load_uses_device``), its round processes load ahead; ``"in_turn"``: it loads
        on the device, and processes may load side by side (``Backend.loads_side_by_side``), so
        one turn loads the next rounds' too; ``"alone"``: each loads in its own turn."""
        if not self._ask("load_uses_device", route, True):
            return "ahead"
        return "in_turn" if self._ask("loads_side_by_side", route, False) else "alone"


#: PyTorch's variable for Inductor's compile worker processes (read when torch is imported)
COMPILE_THREADS_ENV = "TORCHINDUCTOR_COMPILE_THREADS"


def compile_threads_per_build(width: int, cores: int | None = None) -> int:
    """Inductor compile workers per build when ``width`` candidates are in flight: the cores
    shared out, so the builds together do not take the core the measurement runs on (a small
    model on a GPU is bound by its CPU thread launching kernels). PyTorch's default is one per
    core for every build."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, width))


class BuildAheadPool:
    """``build_workers`` builds beside one measurement, for an evaluator with a build/measure
    split (``IsolatedEvaluator``); any other evaluator (a recording) has nothing to build and
    runs its candidates side by side."""

    def __init__(self, evaluator: Evaluator, build_workers: int, *,
                 lock: DeviceLock | None = None) -> None:
        ctx = getattr(evaluator, "ctx", None)
        self._uses = RouteDeviceUse(ctx.config.backend, dict(ctx.config.backend_options)) if ctx else None
        self.evaluator = evaluator
        self.gate = DeviceGate(build_workers=build_workers, build_uses_device=ctx is not None, lock=lock)
        self.split = self.builds = ctx is not None
        #: other candidates may build while the default route is in flight (they measure after it)
        self.builds_before_default = ctx is not None
        self.width = build_workers + 1
        self.overlap = ctx is not None and overlap_enabled(ctx.config)
        cores = None
        if self.overlap:  # the builds share the cores the measuring process is kept off
            cores = len(core_split().build) or None
        self._phases: dict[int, tuple[str, str]] = {}  # number -> (route, latest phase)
        # the candidates' processes inherit it (a torch study's ``compile_threads`` option wins);
        # compile threads change how fast a build runs, never what it generates
        self._env_set = bool(ctx) and COMPILE_THREADS_ENV not in os.environ
        if self._env_set:
            width = build_workers if self.overlap and cores else self.width
            os.environ[COMPILE_THREADS_ENV] = str(compile_threads_per_build(width, cores))

    def submit(
        self, proposal: Proposal, number: int, history: Sequence[CandidateRecord],
        artifacts: dict[str, int], on_phase: Callable[[str], None],
    ) -> Future[CandidateRecord]:
        kw: dict[str, object] = {}
        if self._uses:
            after_default = number > 0 and not any(r.number == 0 for r in history)
            kw = {"gate": self.gate.view(uses_device=self._uses(proposal.route), after_default=after_default),
                  "overlap": self.overlap}
        route = str(proposal.route)
        self._phases[number] = (route, "queued")

        def phase(ph: str) -> None:
            self._phases[number] = (route, ph)
            on_phase(ph)

        def work() -> CandidateRecord:
            try:
                return self.evaluator.evaluate(proposal, number, history, artifacts, phase, **kw)
            finally:
                self._phases.pop(number, None)

        return run_in_thread(work, name=f"gptuner-candidate-{number}")

    def workers(self) -> list[dict[str, object]]:
        """The candidates in flight and their phase (``queued``, ``build``, ``measure``...)."""
        return [{"number": n, "route": r, "state": ph} for n, (r, ph) in sorted(self._phases.items())]

    def measuring(self) -> contextlib.AbstractContextManager[None]:
        return self.gate.measuring()

    def default_committed(self, record: CandidateRecord) -> None:
        """The default route was committed: candidates built beside it may measure (or, when it
        failed, end without being measured)."""
        self.gate.default_done("" if record.eligible else "the default route failed")

    def close(self) -> None:
        """Threads end with their candidate (one still waiting for the default route gives up:
        its process is killed); the compile-thread setting is put back."""
        self.gate.default_done("the study ended before the default route was measured")
        if self._env_set:
            os.environ.pop(COMPILE_THREADS_ENV, None)
            self._env_set = False
