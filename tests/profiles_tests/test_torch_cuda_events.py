"""torch.profiler on CUDA lists every record_function range twice (CPU and device side)."""

from __future__ import annotations

from types import SimpleNamespace as NS

from gptuner_core.profiles.torch import parse_events


def _run(i: int, device: str, kernel_us: float | None):
    children = []
    if kernel_us is not None:
        op = NS(name="aten::conv2d", cpu_children=[], cpu_parent=None,
                kernels=[NS(name="sm90_fprop_kernel", duration=kernel_us)], device_type=f"DeviceType.{device}")
        children.append(op)
    return NS(name=f"gptuner.run.{i}", cpu_children=children, cpu_parent=None,
              device_type=f"DeviceType.{device}", cpu_time_total=10.0)


def test_device_side_copies_of_the_run_ranges_are_not_runs():
    """Seen on the H200: 20 runs read as 40, every other one 0 ms, and the diff showed 0 ms."""
    events = []
    for i in range(3):
        events += [_run(i, "CPU", 4.0), _run(i, "CUDA", None)]
    prof = parse_events(events, device="cuda:0")
    assert prof.runs == 3
    (layer,) = prof.layers
    assert layer.run_ms == (0.004, 0.004, 0.004)
