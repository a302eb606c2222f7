"""Environment telemetry for a measurement window: NVIDIA GPU state (NVML) and host CPU load.

Nothing here raises on a machine without the hardware: every reader returns a dict, with
``"available": False`` and a plain ``"reason"`` when it cannot read. ``pynvml`` (package
``nvidia-ml-py``) is imported lazily, once per process.

Flags used by the measurement layer and the study health summary:

* ``throttled`` (GPU): the driver reports a power cap, a thermal or hardware slowdown, or the SM
  clock is below 75 % of its maximum while the GPU is not idle (NVBench's throttle threshold).
* ``busy`` (CPU): other processes used more than ``busy_cores`` CPU cores on average during the
  window (our own process and its threads are excluded).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any


#: NVML clock-event ("throttle") reason bits and the names we report for them.
THROTTLE_REASONS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}
#: Reasons that mean the GPU ran slower than it could for reasons outside the workload.
THROTTLING_REASONS = frozenset(
    {
        "sw_power_cap",
        "hw_slowdown",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
        "board_limit",
    }
)
#: SM clock below this share of the maximum (while not idle) counts as throttled.
CLOCK_THRESHOLD = 0.75

_nvml_lock = threading.Lock()
_nvml_state: dict[str, Any] = {}


def decode_throttle_reasons(mask: int) -> list[str]:
    """Names of the set bits of an NVML clock-event mask (unknown bits as ``bit_0x...``)."""
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    bit = 1
    while unknown:
        if unknown & bit:
            names.append(f"bit_{bit:#x}")
            unknown &= ~bit
        bit <<= 1
    return names


def is_throttled(
    reasons: list[str], sm_clock_mhz: float | None, max_sm_clock_mhz: float | None
) -> bool:
    """The ``throttled`` rule (see the module docstring), from decoded reasons and clocks."""
    if THROTTLING_REASONS.intersection(reasons):
        return True
    if "gpu_idle" in reasons or not sm_clock_mhz or not max_sm_clock_mhz:
        return False
    return sm_clock_mhz < CLOCK_THRESHOLD * max_sm_clock_mhz


def _nvml() -> tuple[Any, str]:
    """The initialized ``pynvml`` module, or ``(None, reason)``; tried once per process."""
    with _nvml_lock:
        if "module" in _nvml_state or "reason" in _nvml_state:
            return _nvml_state.get("module"), _nvml_state.get("reason", "")
        try:
            import pynvml
        except ImportError as exc:
            _nvml_state["reason"] = f"no NVIDIA GPU (NVML: nvidia-ml-py not installed: {exc})"
            return None, _nvml_state["reason"]
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # pynvml raises NVMLError subclasses (library/driver missing)
            _nvml_state["reason"] = f"no NVIDIA GPU (NVML: {exc})"
            return None, _nvml_state["reason"]
        _nvml_state["module"] = pynvml
        return pynvml, ""


def _try(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception:  # a field a device or driver does not support reads as None
        return None


def gpu_telemetry(device_index: int = 0) -> dict[str, Any]:
    """One NVML reading of GPU ``device_index``.

    Returns:
        ``{"available": True, "name", "sm_clock_mhz", "mem_clock_mhz", "max_sm_clock_mhz",
        "max_mem_clock_mhz", "temperature_c", "power_w", "power_limit_w", "throttle_reasons",
        "throttled"}`` (a field the device does not report is ``None``), or
        ``{"available": False, "reason": "no NVIDIA GPU (NVML: ...)"}``.
    """
    nv, reason = _nvml()
    if nv is None:
        return {"available": False, "reason": reason}
    try:
        count = nv.nvmlDeviceGetCount()
        if not 0 <= device_index < count:
            return {
                "available": False,
                "reason": f"no NVIDIA GPU with index {device_index} (NVML sees {count})",
            }
        handle = nv.nvmlDeviceGetHandleByIndex(device_index)
    except Exception as exc:
        return {"available": False, "reason": f"no NVIDIA GPU (NVML: {exc})"}
    name = _try(nv.nvmlDeviceGetName, handle)
    if isinstance(name, bytes):
        name = name.decode()
    sm = _try(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_SM)
    mem = _try(nv.nvmlDeviceGetClockInfo, handle, nv.NVML_CLOCK_MEM)
    max_sm = _try(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_SM)
    max_mem = _try(nv.nvmlDeviceGetMaxClockInfo, handle, nv.NVML_CLOCK_MEM)
    temp = _try(nv.nvmlDeviceGetTemperature, handle, nv.NVML_TEMPERATURE_GPU)
    power = _try(nv.nvmlDeviceGetPowerUsage, handle)
    limit = _try(nv.nvmlDeviceGetEnforcedPowerLimit, handle)
    getter = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )
    mask = _try(getter, handle) if getter is not None else None
    reasons = decode_throttle_reasons(int(mask)) if mask is not None else []
    return {
        "available": True,
        "index": device_index,
        "name": name,
        "sm_clock_mhz": sm,
        "mem_clock_mhz": mem,
        "max_sm_clock_mhz": max_sm,
        "max_mem_clock_mhz": max_mem,
        "temperature_c": temp,
        "power_w": power / 1000.0 if power is not None else None,
        "power_limit_w": limit / 1000.0 if limit is not None else None,
        "throttle_reasons": reasons,
        "throttled": is_throttled(reasons, sm, max_sm),
    }


# -- CPU ---------------------------------------------------------------------------------------


def _clock_ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100


def _process_cpu_ticks() -> dict[int, tuple[str, int]]:
    """``pid -> (command name, utime + stime ticks)`` for every readable process."""
    out: dict[int, tuple[str, int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                raw = f.read().decode(errors="replace")
        except OSError:
            continue  # the process ended or is not readable
        close = raw.rfind(")")
        if close < 0:
            continue
        name = raw[raw.find("(") + 1 : close]
        fields = raw[close + 2 :].split()
        try:
            out[int(entry)] = (name, int(fields[11]) + int(fields[12]))
        except (IndexError, ValueError):
            continue
    return out


def _cpu_frequency_mhz() -> tuple[float | None, float | None, str]:
    """Current and maximum CPU frequency (MHz, mean over CPUs) and where it was read."""
    cur: list[float] = []
    mx: list[float] = []
    for d in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq")):
        try:
            cur.append(int((d / "scaling_cur_freq").read_text()) / 1000.0)
            mx.append(int((d / "cpuinfo_max_freq").read_text()) / 1000.0)
        except (OSError, ValueError):
            continue
    if cur:
        return sum(cur) / len(cur), (sum(mx) / len(mx) if mx else None), "cpufreq"
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None, None, "unreadable"
    mhz = [float(line.split(":")[1]) for line in text.splitlines() if line.startswith("cpu MHz")]
    if mhz:
        return sum(mhz) / len(mhz), None, "/proc/cpuinfo"
    return None, None, "unreadable"


class CpuSampler:
    """Reads host CPU load over the interval since its previous :meth:`read`.

    Busy-ness is measured from ``/proc/<pid>/stat`` CPU-time deltas, so it reflects what other
    processes did *during* the measurement window, not a sleep taken afterwards.

    Args:
        busy_cores: other processes using more than this many cores on average mark the window
            ``busy``.
        busy_process_share: a process using more than this share of one core counts as busy.
    """

    def __init__(self, busy_cores: float = 0.25, busy_process_share: float = 0.1) -> None:
        self.busy_cores = busy_cores
        self.busy_process_share = busy_process_share
        self._ticks = _clock_ticks()
        self._last: tuple[float, dict[int, tuple[str, int]]] | None = None
        self.reset()

    def reset(self) -> None:
        """Start a new window now."""
        self._last = (time.monotonic(), _process_cpu_ticks())

    def read(self) -> dict[str, Any]:
        """CPU readings for the window since the previous read (or construction)."""
        now = time.monotonic()
        procs = _process_cpu_ticks()
        assert self._last is not None
        t0, before = self._last
        self._last = (now, procs)
        dt = max(now - t0, 1e-6)
        me = os.getpid()
        busy: list[dict[str, Any]] = []
        other_cores = 0.0
        for pid, (name, ticks) in procs.items():
            if pid == me or pid not in before or before[pid][0] != name:
                continue
            cores = (ticks - before[pid][1]) / self._ticks / dt
            if cores <= 0:
                continue
            other_cores += cores
            if cores > self.busy_process_share:
                busy.append({"pid": pid, "name": name, "cores": round(cores, 3)})
        busy.sort(key=lambda p: -p["cores"])
        try:
            load = list(os.getloadavg())
        except OSError:
            load = None
        freq, max_freq, freq_source = _cpu_frequency_mhz()
        return {
            "available": True,
            "cpu_count": os.cpu_count(),
            "load_avg": load,
            "freq_mhz": freq,
            "max_freq_mhz": max_freq,
            "freq_source": freq_source,
            "window_s": round(dt, 4),
            "other_cpu_cores": round(other_cores, 3),
            "busy_processes": len(busy),
            "top_processes": busy[:5],
            "busy": other_cores > self.busy_cores,
        }


def cpu_telemetry(interval_s: float = 0.05, busy_cores: float = 0.25) -> dict[str, Any]:
    """One stand-alone CPU reading: load average, frequency, other busy processes.

    Busy processes are counted from CPU-time deltas over ``interval_s`` (a short sleep). Inside
    :func:`gptuner_core.measurement.measure` a :class:`CpuSampler` spans each window instead.
    """
    if not Path("/proc").is_dir():
        return {"available": False, "reason": "no /proc file system (not Linux)"}
    sampler = CpuSampler(busy_cores=busy_cores)
    time.sleep(max(0.0, interval_s))
    return sampler.read()


def window_telemetry(
    runner_telemetry: dict[str, Any] | None = None,
    *,
    cpu: CpuSampler | dict[str, Any] | None = None,
    gpu_index: int | None = 0,
) -> dict[str, Any]:
    """Merge a runner's own telemetry with host CPU and NVML GPU readings.

    Args:
        runner_telemetry: ``Runner.telemetry()`` of the backend (kept under ``"runner"``). When it
            already holds a ``"gpu"`` reading (a GPU backend reading its own device), NVML is not
            read again.
        cpu: a :class:`CpuSampler` (read now), a ready CPU reading, or ``None`` for a short
            stand-alone :func:`cpu_telemetry`.
        gpu_index: the NVML device to read, or ``None`` to skip the GPU.

    Returns:
        ``{"time", "runner", "cpu", "gpu", "throttled", "busy"}``.
    """
    runner = dict(runner_telemetry or {})
    if isinstance(cpu, CpuSampler):
        cpu_reading = cpu.read()
    elif isinstance(cpu, dict):
        cpu_reading = cpu
    else:
        cpu_reading = cpu_telemetry()
    if isinstance(runner.get("gpu"), dict):
        gpu_reading = runner["gpu"]
    elif gpu_index is None:
        gpu_reading = {"available": False, "reason": "GPU telemetry not requested"}
    else:
        gpu_reading = gpu_telemetry(gpu_index)
    throttled = bool(runner.get("throttled")) or bool(gpu_reading.get("throttled"))
    busy = bool(runner.get("busy")) or bool(cpu_reading.get("busy"))
    return {
        "time": time.time(),
        "runner": runner,
        "cpu": cpu_reading,
        "gpu": gpu_reading,
        "throttled": throttled,
        "busy": busy,
    }
