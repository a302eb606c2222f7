"""Who may use the measuring device while candidates are built ahead (one study, one device).

Building ahead runs up to ``build_workers`` builds in parallel while one candidate is measured.
A backend whose build touches the measuring device (``Backend.build_uses_device``: TensorRT times
tactics on the GPU, torch max-autotune and Triton benchmark kernels, ONNX Runtime quantizes on the
CPU it is measured on) must never build while a measurement runs there:

* such builds hold the gate *shared* (they may overlap each other), a measurement holds it
  *exclusive* (nothing else of this study runs on the device meanwhile); a waiting measurement
  stops new builds from starting, so measuring is never starved by a queue of builds; a
  candidate's first calls (:meth:`DeviceGate.sharing`, ``engine.process.turn``) share it too;
* a build that does not touch the device only takes a build slot. Whether a build touches it
  is asked per route (``Backend.route_uses_device``: torch on a GPU compiles a default-mode route
  on the CPU, but max-autotune benchmarks kernels on the device): :meth:`DeviceGate.view` gives
  the candidate a gate that answers for its own build;
* ``lock`` (a :class:`gptuner_core.device_lock.DeviceLock`) is held around every measurement, so
  another study's measurement never overlaps this one's either;
* candidates may build while the default route (candidate 0) is still in flight, but measure
  only after it was committed (it defines the golden outputs and 1.0x): their view is made
  ``after_default`` and waits in :meth:`GateView.measuring` until :meth:`DeviceGate.default_done`;
  when the default failed (or the study ended first) that wait raises :class:`DefaultRouteFailed`
  and the candidate's process is killed.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from gptuner_core.errors import GptunerError


if TYPE_CHECKING:
    from collections.abc import Iterator

    from gptuner_core.device_lock import DeviceLock


class DefaultRouteFailed(GptunerError):
    """A candidate built before the default route was committed will not be measured: the
    default failed, or the study ended first."""


class DeviceGate:
    """Build slots and the measuring device of one study; ``build_uses_device`` is the answer
    for builds that do not say (:meth:`building` without an argument)."""

    def __init__(self, *, build_workers: int, build_uses_device: bool,
                 lock: DeviceLock | None = None) -> None:
        self.build_workers = max(1, int(build_workers))
        self.build_uses_device = build_uses_device
        self.lock = lock
        self._slots = threading.BoundedSemaphore(self.build_workers)
        self._cond = threading.Condition()
        self._builders = 0
        self._sharers = 0  # builds that use the device and first calls
        self._measuring = False
        self._measurers_waiting = 0
        #: the most builds that ran at once (the log and tests)
        self.max_builders = 0
        self._default = threading.Event()
        self._default_failed = ""

    def view(self, *, uses_device: bool, after_default: bool = False) -> GateView:
        """This gate, for one candidate whose build does (not) touch the device;
        ``after_default``: it measures only once the default route was committed."""
        return GateView(self, uses_device=uses_device, after_default=after_default)

    def default_done(self, failed: str = "") -> None:
        """The default route was committed (``failed``: why it cannot define 1.0x, or why the
        study ended before it did): candidates waiting to measure go on, or give up."""
        if not self._default.is_set():
            self._default_failed = failed
            self._default.set()

    def wait_default(self) -> None:
        """Until the default route was committed; raises :class:`DefaultRouteFailed` when it
        failed."""
        self._default.wait()
        if self._default_failed:
            msg = f"not measured: {self._default_failed}"
            raise DefaultRouteFailed(msg)

    @contextlib.contextmanager
    def building(self, uses_device: bool | None = None) -> Iterator[None]:
        uses = self.build_uses_device if uses_device is None else bool(uses_device)
        with self._slots:
            if not uses:
                yield
                return
            with self.sharing(build=True):
                yield

    @contextlib.contextmanager
    def sharing(self, *, build: bool = False) -> Iterator[None]:
        """The device shared, without a build slot: work that runs on the device but is not
        measured (a build that uses it; a candidate's first calls). Waits while a measurement
        runs or waits."""
        with self._cond:
            self._cond.wait_for(lambda: not self._measuring and not self._measurers_waiting)
            self._sharers += 1
            if build:
                self._builders += 1
                self.max_builders = max(self.max_builders, self._builders)
        try:
            yield
        finally:
            with self._cond:
                self._sharers -= 1
                self._builders -= int(build)
                self._cond.notify_all()

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """A build slot alone (overlap: a candidate's process builds under it, then asks for
        the device with :meth:`measuring`; ``engine.scale.overlap``)."""
        with self._slots:
            yield

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        with self._cond:
            self._measurers_waiting += 1
            try:
                self._cond.wait_for(lambda: not self._measuring and self._sharers == 0)
            finally:
                self._measurers_waiting -= 1
            self._measuring = True
        try:
            if self.lock is not None:
                with self.lock.held(timeout=None):
                    yield
            else:
                yield
        finally:
            with self._cond:
                self._measuring = False
                self._cond.notify_all()


class GateView:
    """A :class:`DeviceGate` as one candidate sees it: ``building()`` answers for its build."""

    def __init__(self, gate: DeviceGate, *, uses_device: bool, after_default: bool = False) -> None:
        self.gate, self.uses_device, self.after_default = gate, uses_device, after_default

    def building(self) -> contextlib.AbstractContextManager[None]:
        return self.gate.building(self.uses_device)

    def slot(self) -> contextlib.AbstractContextManager[None]:
        return self.gate.slot()

    def sharing(self) -> contextlib.AbstractContextManager[None]:
        return self.gate.sharing()

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        if self.after_default:
            self.gate.wait_default()
        with self.gate.measuring():
            yield
