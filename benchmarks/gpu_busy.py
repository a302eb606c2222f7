"""GPU busy share: NVML's utilisation sampled in a thread (nvidia-ml-py, else torch's wrapper).

``GpuBusy(index).start()`` ... ``.stop()``; ``share(t0, t1)`` is the mean of the samples taken
between the two wall-clock instants (NVML's "percent of time over the past sample period during
which one or more kernels was executing"), ``None`` without NVML.
"""

from __future__ import annotations

import threading
import time


class GpuBusy:
    def __init__(self, index: int = 0, period_s: float = 0.2) -> None:
        self.index, self.period_s = index, period_s
        self.samples: list[tuple[float, float]] = []
        self.source = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._read = self._reader()

    def _reader(self):
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
            self.source = "nvml"
            return lambda: float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
        except Exception:  # noqa: BLE001 - no NVML: torch's wrapper, else nothing
            pass
        try:
            import torch

            torch.cuda.utilization(self.index)
            self.source = "torch.cuda.utilization"
            return lambda: float(torch.cuda.utilization(self.index))
        except Exception:  # noqa: BLE001
            return None

    def start(self) -> GpuBusy:
        if self._read is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.samples.append((time.time(), self._read()))
            except Exception:  # noqa: BLE001
                pass
            self._stop.wait(self.period_s)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def share(self, t0: float, t1: float) -> float | None:
        window = [u for t, u in self.samples if t0 <= t <= t1]
        return round(sum(window) / len(window) / 100.0, 3) if window else None
