"""Who may use the measuring device while candidates are built ahead (one study, one device).

Building ahead runs up to ``build_workers`` builds in parallel while one candidate is measured.
A backend whose build touches the measuring device (``Backend.build_uses_device``: TensorRT times
tactics on the GPU, torch max-autotune and Triton benchmark kernels, ONNX Runtime quantizes on the
CPU it is measured on) must never build while a measurement runs there:

* such builds hold the gate *shared* (they may overlap each other), a measurement holds it
  *exclusive* (nothing else of this study runs on the device meanwhile); a waiting measurement
  stops new builds from starting, so measuring is never starved by a queue of builds;
* a build that does not touch the device only takes a build slot;
* ``lock`` (a :class:`gptuner_core.device_lock.DeviceLock`) is held around every measurement, so
  another study's measurement never overlaps this one's either.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Iterator

    from gptuner_core.device_lock import DeviceLock


class DeviceGate:
    def __init__(self, *, build_workers: int, build_uses_device: bool,
                 lock: DeviceLock | None = None) -> None:
        self.build_workers = max(1, int(build_workers))
        self.build_uses_device = build_uses_device
        self.lock = lock
        self._slots = threading.BoundedSemaphore(self.build_workers)
        self._cond = threading.Condition()
        self._builders = 0
        self._measuring = False
        self._measurers_waiting = 0
        #: the most builds that ran at once (the log and tests)
        self.max_builders = 0

    @contextlib.contextmanager
    def building(self) -> Iterator[None]:
        with self._slots:
            if not self.build_uses_device:
                yield
                return
            with self._cond:
                self._cond.wait_for(lambda: not self._measuring and not self._measurers_waiting)
                self._builders += 1
                self.max_builders = max(self.max_builders, self._builders)
            try:
                yield
            finally:
                with self._cond:
                    self._builders -= 1
                    self._cond.notify_all()

    @contextlib.contextmanager
    def measuring(self) -> Iterator[None]:
        with self._cond:
            self._measurers_waiting += 1
            try:
                self._cond.wait_for(lambda: not self._measuring and (
                    not self.build_uses_device or self._builders == 0))
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
