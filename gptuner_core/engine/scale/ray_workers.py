"""Ray workers: one long-lived actor per measuring device, the coordinator keeps store and search.

``pip install 'gptuner[ray]'``; Ray is imported only here, only when a study asks for it
(``ScaleOut.ray``). Each actor holds one device: a GPU (``num_gpus=1``: Ray pins it with
``CUDA_VISIBLE_DEVICES``, which the candidate processes inherit) or a CPU "device" (the custom
resource ``gptuner_cpu_device``, one per device a node offers: ``ray start --resources
'{"gptuner_cpu_device": 2}'``). The actor runs the study's evaluator, so every candidate is still a
fresh isolated process (``run_isolated``) started by the worker: a sticky CUDA error or a segfault
ends that process, never the worker. Workers never open the study's store: they get a proposal,
its number and a copy of the history, and return the record (``engine.scale.parallel`` commits it).

Each record carries ``extra["device"]``: ``host``, ``uuid`` (GPU UUID, or ``host:cpuN..`` for a
CPU device), ``fingerprint`` (what decides whether two devices measure alike: GPU name, memory and
driver, or CPU model and core count) and ``worker``. Workers whose fingerprints differ are refused
unless ``normalize``: then a worker whose device differs from the default route's measures the
default route once on its own device and computes its candidates' speed-ups against that.

Artifacts stay where they were built. On one host the recorded path is enough (the study folder
is shared). Across hosts, :meth:`RayPool.fetch` copies a candidate's artifact from its worker
(an actor method returning the bytes, a tar for a folder) into the study folder; the coordinator
fetches every eligible candidate from another host that is among the best three so far when it
commits it, so the winner (and any re-validation contender) is always local before the study
finishes. The study folder (inputs, golden outputs) must then be on a path every node sees.

Drift and racing re-measurements run on the worker that measured the record (the default
route's for drift), re-validation of the winner on the coordinator's device (one device).

Faults: a worker, its node or Ray dying with a candidate in flight raises
:class:`~gptuner_core.engine.scale.parallel.WorkerLost` for it and the loop re-queues it (the actor
is restarted by Ray, ``max_restarts=-1``); a candidate crashing its own process is its result.
"""

from __future__ import annotations

import contextlib
import io
import os
import platform
import socket
import tarfile
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.engine.scale.scale_out import WorkerLost
from gptuner_core.engine.scale.scale_out import nothing
from gptuner_core.errors import ConfigError


if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Sequence

    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.engine.scale.scale_out import ScaleOut
    from gptuner_core.records import CandidateRecord
    from gptuner_core.strategies import Proposal

CPU_RESOURCE = "gptuner_cpu_device"
#: backends measured on the CPU (their workers take a CPU device, not a GPU)
CPU_BACKENDS = frozenset({"onnxruntime", "replay"})
#: remote eligible candidates fetched when they rank among this many best so far
FETCH_BEST = 3


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        msg = f"--ray needs Ray: pip install 'gptuner[ray]' ({exc})"
        raise ConfigError(msg) from None
    return ray


def describe_device(kind: str, index: int) -> dict[str, Any]:
    """This process's device: host, uuid, fingerprint (see the module docstring)."""
    host = socket.gethostname()
    if kind == "gpu":
        from gptuner_core.device_lock import measuring_devices

        uuid = measuring_devices("cuda:0")[0]
        return {"host": host, "uuid": uuid, "fingerprint": _gpu_fingerprint(), "worker": index}
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    return {"host": host, "uuid": f"{host}:cpu-device{index}", "worker": index,
            "fingerprint": f"cpu {model} x{len(cores) or os.cpu_count()}"}


def _gpu_fingerprint() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            h = pynvml.nvmlDeviceGetHandleByIndex(0)
            name = pynvml.nvmlDeviceGetName(h)
            name = name.decode() if isinstance(name, bytes) else name
            mem = pynvml.nvmlDeviceGetMemoryInfo(h).total // 2**20
            driver = pynvml.nvmlSystemGetDriverVersion()
            driver = driver.decode() if isinstance(driver, bytes) else driver
            return f"gpu {name} {mem} MiB driver {driver}"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML missing: the visible device's name is all we know
        return f"gpu {os.environ.get('CUDA_VISIBLE_DEVICES', '?')}"


def check_devices(devices: Sequence[dict[str, Any]], *, normalize: bool) -> None:
    """Refuse workers whose devices differ (their latencies cannot be compared) unless
    ``normalize``."""
    prints = sorted({d["fingerprint"] for d in devices})
    if len(prints) > 1 and not normalize:
        msg = (
            "the workers' devices differ, so their latencies cannot be compared: "
            + "; ".join(f"worker {d['worker']} on {d['host']}: {d['fingerprint']}" for d in devices)
            + " (expected one kind of device; pass --normalize to compare each candidate "
            "with the default route measured on its own device)"
        )
        raise ConfigError(msg)


def unpack(data: bytes, name: str, dest: Path) -> Path:
    """Write an artifact fetched with :meth:`Worker.fetch` (bytes, or a tar of a folder) into
    ``dest``; the local path of the artifact."""
    dest.mkdir(parents=True, exist_ok=True)
    if len(data) > 262 and data[257:262] == b"ustar":
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(dest, filter="data")
    else:
        (dest / name).write_bytes(data)
    return dest / name


class Worker:
    """The actor's body (wrapped by ``ray.remote`` in :class:`RayPool`)."""

    def __init__(self, evaluator: Evaluator, index: int, kind: str, normalize: bool) -> None:
        self.evaluator = evaluator
        self.index = index
        self.normalize = normalize
        self.device = describe_device(kind, index)
        self._default: Any = None  # this device's measurement of the default route (normalize)

    def info(self) -> dict[str, Any]:
        return {**self.device, "pid": os.getpid()}

    def evaluate(self, proposal: Proposal, number: int, history: Sequence[CandidateRecord],
                 artifacts: dict[str, int]) -> CandidateRecord:
        rec = self.evaluator.evaluate(proposal, number, history, artifacts, lambda ph: None)
        rec = rec.replace(extra={**rec.extra, "device": dict(self.device)})
        if self.normalize and history and rec.number != 0:
            rec = self._normalized(rec, history[0])
        return rec

    def _normalized(self, rec: CandidateRecord, default: CandidateRecord) -> CandidateRecord:
        from gptuner_core.engine.decide import verdict

        theirs = (default.extra.get("device") or {}).get("fingerprint")
        if theirs == self.device["fingerprint"] or rec.latency is None:
            return rec
        if self._default is None:
            self._default = self.evaluator.remeasure(default, f"baselines/device-{self.index}")
        res = self._default
        if not res.ok or res.latency is None:
            return rec.replace(speedup=None, speedup_ci=None, extra={
                **rec.extra, "normalized": f"the default route failed on this device: {res.error}"})
        base = default.replace(latency=res.latency, samples_ms=res.samples_ms)
        rec = verdict.with_speedup(rec, base)
        return rec.replace(extra={**rec.extra, "normalized": {
            "default_median_ms": res.latency.median_ms, "device": self.device["uuid"]}})

    def remeasure(self, record: CandidateRecord, purpose: str, scale: float = 1.0) -> Any:
        return self.evaluator.remeasure(record, purpose, scale)

    def fetch(self, path: str) -> bytes:
        """The bytes of an artifact on this worker's node (a tar of a folder)."""
        p = Path(path)
        if p.is_file():
            return p.read_bytes()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(p, arcname=p.name)
        return buf.getvalue()


class RayPool:
    """One Ray actor per device; ``width`` = workers (``engine.scale.parallel.CandidatePool``)."""

    def __init__(self, scale: ScaleOut, evaluator: Evaluator) -> None:
        ray = self.ray = import_ray()
        self.started = False
        if not ray.is_initialized():
            if scale.ray == "auto":
                try:
                    ray.init(address="auto", include_dashboard=False)
                except (ConnectionError, RuntimeError):
                    ray.init(resources={CPU_RESOURCE: scale.workers}, include_dashboard=False)
            else:
                try:
                    ray.init(address=scale.ray, include_dashboard=False)
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    msg = f"--ray {scale.ray}: cannot join the Ray cluster there ({type(exc).__name__}: {exc})"
                    raise ConfigError(msg) from None
            self.started = True
        self.host = socket.gethostname()
        self.evaluator = evaluator
        self.kind = self._kind(evaluator)
        self.builds = getattr(evaluator, "ctx", None) is not None  # real builds (not a recording)
        resources = ray.cluster_resources()
        need = "GPU" if self.kind == "gpu" else CPU_RESOURCE
        if resources.get(need, 0) < scale.workers:
            self.close()
            msg = (
                f"--workers {scale.workers} needs {scale.workers} '{need}' resources in the Ray "
                f"cluster; it has {resources.get(need, 0):g}"
                + (f" (start nodes with --resources '{{\"{CPU_RESOURCE}\": N}}')" if need == CPU_RESOURCE else "")
            )
            raise ConfigError(msg)
        opts: dict[str, Any] = {"max_restarts": -1, "max_task_retries": 0, "num_cpus": 0}
        opts.update({"num_gpus": 1} if self.kind == "gpu" else {"resources": {CPU_RESOURCE: 1}})
        actor = ray.remote(Worker).options(**opts)
        self.actors = [actor.remote(evaluator, i, self.kind, scale.normalize) for i in range(scale.workers)]
        self.width = scale.workers
        self._busy: set[int] = set()
        self._used: dict[int, int] = {}
        self.devices = ray.get([a.info.remote() for a in self.actors])
        try:
            check_devices(self.devices, normalize=scale.normalize)
        except ConfigError:
            self.close()
            raise

    @staticmethod
    def _kind(evaluator: Evaluator) -> str:
        ctx = getattr(evaluator, "ctx", None)
        if ctx is None:
            return "cpu"  # a recording: nothing runs on a device
        cfg = ctx.config
        if cfg.backend in CPU_BACKENDS or str(cfg.backend_options.get("device", "")) == "cpu":
            return "cpu"
        return "gpu"

    def workers(self) -> list[dict[str, Any]]:
        """Each worker's device and state (``busy``/``idle``), for the Live page."""
        return [{**d, "state": "busy" if i in self._busy else "idle"} for i, d in enumerate(self.devices)]

    def submit(
        self, proposal: Proposal, number: int, history: Sequence[CandidateRecord],
        artifacts: dict[str, int], on_phase: Callable[[str], None],
    ) -> Future[CandidateRecord]:
        from ray import exceptions as rx

        free = [i for i in range(len(self.actors)) if i not in self._busy]
        index = min(free, key=lambda i: self._used.get(i, 0))  # the least used free worker
        self._busy.add(index)
        self._used[index] = self._used.get(index, 0) + 1
        on_phase(f"worker {index}")
        out: Future[CandidateRecord] = Future()
        out.set_running_or_notify_cancel()
        lost = tuple(getattr(rx, n) for n in ("RayActorError", "WorkerCrashedError", "NodeDiedError",
                                               "ObjectLostError", "RaySystemError", "ActorUnavailableError")
                     if hasattr(rx, n))

        def done(f: Future[Any]) -> None:
            self._busy.discard(index)
            try:
                out.set_result(f.result())
            except lost as exc:
                out.set_exception(WorkerLost(f"worker {index} lost: {type(exc).__name__}"))
            except BaseException as exc:  # noqa: BLE001 - handed to the coordinator
                out.set_exception(exc)

        ref = self.actors[index].evaluate.remote(proposal, number, list(history), dict(artifacts))
        ref.future().add_done_callback(done)
        return out

    def measuring(self) -> contextlib.AbstractContextManager[None]:
        return nothing()

    def remeasure(self, record: CandidateRecord, purpose: str, scale: float = 1.0) -> Any:
        """A drift or racing re-measurement, on the worker (device) that measured ``record``
        (after the candidate it is running, if any); a lost worker answers a CRASHED result."""
        from gptuner_core.records import CandidateState
        from gptuner_core.records import ChildResult

        worker = int((record.extra.get("device") or {}).get("worker", 0)) % max(1, len(self.actors))
        try:
            return self.ray.get(self.actors[worker].remeasure.remote(record, purpose, scale))
        except Exception as exc:  # noqa: BLE001 - the worker died: this re-measurement failed
            return ChildResult(state=CandidateState.CRASHED, error=f"worker {worker} lost: {type(exc).__name__}")

    def fetch(self, rec: CandidateRecord, dest: Path) -> Path:
        """Copy ``rec``'s artifact from the worker that built it to ``dest`` (a folder)."""
        worker = int((rec.extra.get("device") or {}).get("worker", 0))
        data = self.ray.get(self.actors[worker].fetch.remote(rec.artifact_path))
        return unpack(data, Path(str(rec.artifact_path)).name, dest)

    def committed(self, rec: CandidateRecord, history: Sequence[CandidateRecord]) -> CandidateRecord:
        """Fetch a remote candidate's artifact when it ranks among the best (the winner always)."""
        host = (rec.extra.get("device") or {}).get("host")
        if host in (None, self.host) or not rec.eligible or not rec.artifact_path:
            return rec
        best = sorted((r.speedup or 0.0 for r in history if r.eligible), reverse=True)[:FETCH_BEST]
        if len(best) >= FETCH_BEST and (rec.speedup or 0.0) < best[-1]:
            return rec
        ws = getattr(getattr(self.evaluator, "ctx", None), "workspace", None)
        if ws is None:
            return rec
        local = self.fetch(rec, ws.candidate_dir(rec.number) / "fetched")
        return rec.replace(artifact_path=str(local), extra={**rec.extra, "fetched_from": host})

    def close(self) -> None:
        for a in getattr(self, "actors", []):
            with contextlib.suppress(Exception):
                self.ray.kill(a)
        self.actors = []
        if self.started:
            with contextlib.suppress(Exception):
                self.ray.shutdown()
