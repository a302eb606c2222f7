"""Builds overlapped with measurement, one process per candidate (nothing compiled twice).

Building needs cores, measuring needs the device alone. With overlap on, a candidate's one
process takes a build slot (at most ``build_workers`` builds at once), builds on the build cores,
then asks for the device (``wait`` phase, ``engine.process.turn``); the parent gives the slot
back and the turn goes in two steps. First the device *shared* (the :class:`DeviceGate`'s
shared side, as builds that use the device; ``turn`` file): on the build cores the child loads
what it built and runs its first calls and the accuracy gate's outputs, beside other candidates
doing the same but never beside a measurement. Then it asks for the device alone (``ready``);
the parent takes the measuring side of the gate (and the cross-process device lock), writes the
``turn_alone`` file and the child takes its samples on the measuring cores. The device is free
once the child reports its ``report`` phase (what is left is CPU work on the build cores: outputs,
task metric, the profile's parsing) or exits. A route whose build runs work on the device
(autotuning, freezing: ``Backend.route_uses_device``) holds the device alone from before its
process starts, so its build never overlaps a measurement, and its turn is one step.

The measuring cores: when there are at least four usable cores, the last physical core with its
hyperthread siblings (two logical cpus; the last two where there are no hyperthreads), so that no
build shares a physical core with the measurement; builds and their compile workers get the
others. With fewer, none (nothing is pinned).

``GPTUNER_OVERLAP``: ``auto`` (default: on for torch on a GPU, where builds are CPU work and the
device is measured alone), ``on`` or ``off`` (build and measure in two processes, the artifact
loaded again: ``engine.evaluate.evaluator.IsolatedEvaluator._run_split``).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.engine.process.isolation import write_json_atomic
from gptuner_core.engine.process.turn import READY
from gptuner_core.engine.process.turn import REPORT
from gptuner_core.engine.process.turn import TURN
from gptuner_core.engine.process.turn import TURN_ALONE
from gptuner_core.engine.process.turn import WAIT
from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.scale.device_gate import GateView

OVERLAP_ENV = "GPTUNER_OVERLAP"
OVERLAP_MODES = ("auto", "on", "off")
#: cores kept for the measuring process when there are at least MIN_CORES
MEASURE_CORES = 2
MIN_CORES = 4


@dataclass(frozen=True, slots=True, kw_only=True)
class CoreSplit:
    build: tuple[int, ...]
    measure: tuple[int, ...]


def parse_cpu_list(text: str) -> set[int]:
    """A kernel cpu list (``0-3,8,10-11``) as a set of cpu numbers."""
    out: set[int] = set()
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def thread_siblings(cpu: int) -> frozenset[int]:
    """The logical cpus that share ``cpu``'s physical core (its hyperthreads), ``cpu`` included;
    ``cpu`` alone where the system does not say."""
    path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    try:
        with open(path, encoding="ascii") as f:
            return frozenset(parse_cpu_list(f.read()) | {cpu})
    except (OSError, ValueError):
        return frozenset({cpu})


def core_split(cpus: set[int] | None = None,
               siblings: Callable[[int], frozenset[int]] = thread_siblings) -> CoreSplit:
    """Build cores and measuring cores (both empty: not enough cores to keep any apart). The
    measuring cores are whole physical cores from the last one (each with its usable
    hyperthread siblings) until there are ``MEASURE_CORES``: no build runs on a sibling of the
    measurement, which would share its core's execution units and caches."""
    if cpus is None:
        cpus = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()
    ordered = sorted(cpus)
    if len(ordered) < MIN_CORES:
        return CoreSplit(build=(), measure=())
    measure: set[int] = set()
    for cpu in reversed(ordered):
        if len(measure) >= MEASURE_CORES:
            break
        measure |= siblings(cpu) & cpus
    build = tuple(c for c in ordered if c not in measure)
    if len(build) < MIN_CORES - MEASURE_CORES:  # a core with many threads: the last cpus
        return CoreSplit(build=tuple(ordered[:-MEASURE_CORES]), measure=tuple(ordered[-MEASURE_CORES:]))
    return CoreSplit(build=build, measure=tuple(sorted(measure)))


def overlap_enabled(config: StudyConfig) -> bool:
    """Whether candidates build and measure in one process with the device turn (see above)."""
    mode = os.environ.get(OVERLAP_ENV) or "auto"
    if mode not in OVERLAP_MODES:
        msg = f"{OVERLAP_ENV} must be one of {', '.join(OVERLAP_MODES)} (got {mode!r})"
        raise ConfigError(msg)
    if mode != "auto":
        return mode == "on"
    from gptuner_core.engine.process.start_method import TORCH_BACKENDS

    if config.backend not in TORCH_BACKENDS:
        return False
    try:
        from gptuner_core.backends import load_backend

        return load_backend(config.backend, dict(config.backend_options)).device().startswith("cuda")
    except Exception:  # noqa: BLE001 - not known to run on a GPU: the two-process path
        return False


class DeviceTurn:
    """The parent's side of one overlapped candidate process: its build slot, then the device.

    ``start()`` before the process starts, ``on_phase`` from its poll loop, ``close()`` after it
    ended (always: it gives back whatever is still held). ``timeline`` gets the wall-clock
    instants (``queued``, ``build_start``, ``warmup_start``: the device shared, ``measure_start``
    and ``measure_end``: the device alone)."""

    def __init__(self, gate: GateView, workdir: Path, split: CoreSplit) -> None:
        self.gate, self.workdir, self.split = gate, workdir, split
        self._slot = contextlib.ExitStack()
        self._shared = contextlib.ExitStack()
        self._device = contextlib.ExitStack()
        self.granted = self.sharing = False
        self.timeline: dict[str, float] = {}

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in (TURN, TURN_ALONE):
            (self.workdir / name).unlink(missing_ok=True)
        self.timeline["queued"] = time.time()
        self._slot.enter_context(self.gate.slot())
        if self.gate.uses_device:  # its build runs work on the device: it holds it throughout
            self._grant(TURN)
        self.timeline["build_start"] = time.time()

    def on_phase(self, phase: str) -> None:
        if phase == WAIT:
            self._slot.close()  # built: the next build may start
            if not self.granted:
                self._share()
        elif phase == READY and not self.granted:  # its first calls are done: the samples
            self._unshare()
            self._grant(TURN_ALONE)
        elif phase == REPORT and self.granted:  # its device work is done: the next may measure
            self._release()

    def _share(self) -> None:
        if not self.sharing:  # a process run again (its launcher died) keeps the first share:
            self._shared.enter_context(self.gate.sharing())  # a second would wait for a
            self.sharing = True  # measurement that waits for the first
            self.timeline["warmup_start"] = time.time()
        write_json_atomic(self.workdir / TURN, {"cpus": list(self.split.build), "warmup": True},
                          durable=False)

    def _unshare(self) -> None:
        self._shared.close()
        self.sharing = False

    def _grant(self, name: str) -> None:
        self._device.enter_context(self.gate.measuring())
        self.granted = True
        self.timeline["measure_start"] = time.time()
        write_json_atomic(self.workdir / name, {"cpus": list(self.split.measure)}, durable=False)

    def _release(self) -> None:
        if "measure_end" not in self.timeline:
            self.timeline["measure_end"] = time.time()
        self._device.close()

    def close(self) -> None:
        self._slot.close()
        self._unshare()
        if self.granted:
            self._release()
