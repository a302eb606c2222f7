"""Telemetry: NVML reports "no NVIDIA GPU" cleanly here and real readings on a GPU host; CPU load."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from gptuner_core.measurement import CpuSampler
from gptuner_core.measurement import cpu_telemetry
from gptuner_core.measurement import gpu_telemetry
from gptuner_core.measurement import window_telemetry
from gptuner_core.measurement.telemetry import decode_throttle_reasons
from gptuner_core.measurement.telemetry import is_throttled


HAS_GPU = gpu_telemetry().get("available", False)


@pytest.mark.skipif(HAS_GPU, reason="an NVIDIA GPU is present")
def test_no_gpu_is_reported_cleanly() -> None:
    """Without a GPU/driver: available False and a plain reason, no exception."""
    t = gpu_telemetry(0)
    assert t["available"] is False
    assert t["reason"].startswith("no NVIDIA GPU (NVML: ")
    assert gpu_telemetry(3)["available"] is False


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_GPU, reason="no NVIDIA GPU")
def test_gpu_readings_on_a_real_gpu() -> None:
    """On an NVIDIA GPU: clocks, temperature, power and decoded throttle reasons are read."""
    t = gpu_telemetry(0)
    assert t["available"] is True
    assert t["sm_clock_mhz"] > 0 and t["max_sm_clock_mhz"] >= t["sm_clock_mhz"] * 0.5
    assert t["mem_clock_mhz"] > 0 and t["max_mem_clock_mhz"] > 0
    assert 0 < t["temperature_c"] < 120
    assert t["power_w"] > 0 and t["power_limit_w"] > 0
    assert isinstance(t["throttle_reasons"], list) and isinstance(t["throttled"], bool)
    assert gpu_telemetry(10_000)["reason"].startswith("no NVIDIA GPU with index 10000")


def test_throttle_reasons_are_decoded() -> None:
    """Known bits get names, unknown bits are kept as hex."""
    assert decode_throttle_reasons(0) == []
    assert decode_throttle_reasons(0x1 | 0x4 | 0x40) == [
        "gpu_idle",
        "sw_power_cap",
        "hw_thermal_slowdown",
    ]
    assert decode_throttle_reasons(0x10000) == ["bit_0x10000"]


@pytest.mark.parametrize(
    ("reasons", "sm", "max_sm", "expected"),
    [
        (["sw_power_cap"], 1980, 1980, True),
        (["hw_thermal_slowdown"], None, None, True),
        ([], 1400, 1980, True),  # below 75 % of max while working
        ([], 1600, 1980, False),
        (["gpu_idle"], 345, 1980, False),  # low clocks while idle are not throttling
        (["applications_clocks_setting"], 1980, 1980, False),
    ],
)
def test_throttled_rule(
    reasons: list[str], sm: int | None, max_sm: int | None, expected: bool
) -> None:
    """Power cap / thermal / HW slowdown, or SM clock < 75 % of max (not idle)."""
    assert is_throttled(reasons, sm, max_sm) is expected


def test_cpu_telemetry_fields() -> None:
    """A stand-alone reading has load average, a frequency source and the busy fields."""
    t = cpu_telemetry(interval_s=0.02)
    assert t["available"] is True
    assert len(t["load_avg"]) == 3
    assert t["freq_source"] in ("cpufreq", "/proc/cpuinfo", "unreadable")
    assert t["busy_processes"] >= 0 and isinstance(t["busy"], bool)


def test_a_busy_neighbour_is_detected() -> None:
    """A real process spinning one core during the window marks it busy and is named."""
    spin = "import time\nend = time.monotonic() + 1.5\nwhile time.monotonic() < end: pass"
    proc = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.4)  # let it start spinning
        sampler = CpuSampler()
        time.sleep(0.4)
        reading = sampler.read()
    finally:
        proc.wait(5)
    assert reading["other_cpu_cores"] > 0.5
    assert reading["busy"] is True
    assert any(p["pid"] == proc.pid for p in reading["top_processes"])


def test_window_telemetry_merges_and_flags() -> None:
    """Runner flags are OR-ed in; a runner's own GPU reading replaces NVML's."""
    w = window_telemetry(
        {"throttled": True, "gpu": {"available": True, "throttled": False}}, cpu={"busy": False}
    )
    assert w["throttled"] is True and w["busy"] is False
    assert w["gpu"] == {"available": True, "throttled": False}
    w = window_telemetry({}, cpu={"busy": True}, gpu_index=None)
    assert w["busy"] is True and w["gpu"]["available"] is False
