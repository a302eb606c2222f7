"""The per-layer profile schema shared by every backend (ONNX Runtime, torch, TensorRT).

A :class:`LayerProfile` is what one *separate* profiling run of a built candidate measured: one
:class:`LayerTime` per runtime layer (an ORT node after graph optimization, a torch kernel, a
TensorRT engine layer) with its op or kernel kind, precision, mean time per inference, its
per-run times (the noise of the profile itself) and, where the backend allows, the ONNX nodes of
the user's model it computes (``origins``; several for a fused layer). Profiles are stored as
``profile.json`` in the candidate's folder and never mix with the latency samples.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gptuner_core.errors import ProfileError


PROFILE_NAME = "profile.json"
SCHEMA = "gptuner.profile/1"


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerTime:
    """One runtime layer of a profiled candidate.

    Attributes:
        name: the layer, node or kernel name as the backend reports it.
        kind: op type or kernel kind (``QLinearConv``, ``cpp_fused_relu``, ``CaskConvolution``).
        precision: ``FP32``/``FP16``/``BF16``/``INT8``/... (``""`` when the backend does not say).
        time_ms: mean time per inference in milliseconds (all calls of the layer in one run).
        run_ms: time of the layer in each profiled run (same order in every layer of a profile).
        calls: calls of this layer per inference.
        origins: ONNX node names of the user's model this layer computes (empty: unknown).
        detail: provider, tactic or source module (free text).
        kernels: generated kernels whose time the layer holds when the backend cannot time
            them one by one (torch on the CPU: the compiled graph's C++ kernels).
    """

    name: str
    kind: str
    precision: str = ""
    time_ms: float = 0.0
    run_ms: tuple[float, ...] = ()
    calls: int = 1
    origins: tuple[str, ...] = ()
    detail: str = ""
    kernels: tuple[str, ...] = ()

    @property
    def fused(self) -> bool:
        """Computes more than one node of the source model."""
        return len(self.origins) > 1

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["run_ms"] = [round(v, 6) for v in self.run_ms]
        data["origins"] = list(self.origins)
        data["kernels"] = list(self.kernels)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LayerTime:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in data.items() if k in names}
        kw["run_ms"] = tuple(float(v) for v in kw.get("run_ms") or ())
        kw["origins"] = tuple(str(v) for v in kw.get("origins") or ())
        kw["kernels"] = tuple(str(v) for v in kw.get("kernels") or ())
        return cls(**kw)


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerProfile:
    """Every layer of one profiling run of one candidate.

    Attributes:
        backend: backend name (``onnxruntime``, ``torch``, ``tensorrt``).
        source: how the times were obtained (``"onnxruntime session profiler"``, ...).
        runs: profiled inferences (after warm-up) that the times average over.
        layers: in execution order.
        wall_ms: end-to-end time per inference as the profiler saw it (``None`` if not reported).
        origin_ops: op type of every node of the source model (origin name -> op type), so a
            diff can label and order groups of layers; empty when the backend has no ONNX origin.
        notes: caveats worth showing (layers that could not be mapped, overhead of profiling).
    """

    backend: str
    source: str
    runs: int
    layers: tuple[LayerTime, ...] = ()
    wall_ms: float | None = None
    origin_ops: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def total_ms(self) -> float:
        """Sum of the layer times per inference."""
        return sum(layer.time_ms for layer in self.layers)

    def share(self, layer: LayerTime) -> float:
        """Fraction of :attr:`total_ms` spent in ``layer``."""
        total = self.total_ms
        return layer.time_ms / total if total > 0 else 0.0

    def run_totals_ms(self) -> tuple[float, ...]:
        """Sum over layers of each run's time (the run-to-run noise of the whole profile)."""
        n = min((len(la.run_ms) for la in self.layers), default=0)
        return tuple(sum(la.run_ms[i] for la in self.layers) for i in range(n))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "backend": self.backend,
            "source": self.source,
            "runs": self.runs,
            "wall_ms": self.wall_ms,
            "origin_ops": dict(self.origin_ops),
            "notes": list(self.notes),
            "layers": [la.to_json() for la in self.layers],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LayerProfile:
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            got = data.get("schema") if isinstance(data, dict) else type(data).__name__
            msg = f"not a gptuner layer profile (expected schema '{SCHEMA}', got {got!r})"
            raise ProfileError(msg)
        return cls(
            backend=str(data["backend"]),
            source=str(data.get("source", "")),
            runs=int(data.get("runs", 0)),
            wall_ms=data.get("wall_ms"),
            origin_ops={str(k): str(v) for k, v in (data.get("origin_ops") or {}).items()},
            notes=tuple(str(n) for n in data.get("notes") or ()),
            layers=tuple(LayerTime.from_json(x) for x in data.get("layers") or ()),
        )

    def save(self, path: str | Path) -> Path:
        """Write atomically (tmp + rename) and return the path."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1))  # origin_ops keep graph order
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> LayerProfile:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            msg = f"no layer profile at '{path}' (expected a {PROFILE_NAME} written by capture_profile)"
            raise ProfileError(msg) from None
        except json.JSONDecodeError as exc:
            msg = f"layer profile '{path}' is not valid JSON ({exc.msg} at line {exc.lineno})"
            raise ProfileError(msg) from None
        return cls.from_json(data)


def mean_and_se(values: tuple[float, ...] | list[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (0 with fewer than two values)."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def median_and_se(values: tuple[float, ...] | list[float]) -> tuple[float, float]:
    """Median and a robust standard error of it (1.2533 * 1.4826 * MAD / sqrt(n)).

    Robust to the preemption outliers of a shared machine, where a mean's error is dominated by
    a few slow runs.
    """
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    s = sorted(values)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    if n < 2:
        return med, 0.0
    dev = sorted(abs(v - med) for v in values)
    mad = dev[n // 2] if n % 2 else (dev[n // 2 - 1] + dev[n // 2]) / 2
    return med, 1.2533 * 1.4826 * mad / math.sqrt(n)


def quantile_and_halfwidth(values: tuple[float, ...] | list[float], q: float = 0.25) -> tuple[float, float]:
    """The ``q`` quantile and half the width of its distribution-free 95 % CI.

    The CI bounds are the order statistics at ``n*q -/+ 1.96*sqrt(n*q*(1-q))`` (binomial), so no
    distribution is assumed. A low quantile estimates a layer's uncontended time on a shared
    machine, where slow runs come from other processes, not from the route.
    """
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    s = sorted(values)
    pos = q * (n - 1)
    lo_i, frac = int(pos), pos - int(pos)
    value = s[lo_i] + (s[min(lo_i + 1, n - 1)] - s[lo_i]) * frac
    if n < 2:
        return value, 0.0
    half = 1.96 * math.sqrt(n * q * (1 - q))
    lo = s[max(0, math.floor(n * q - half))]
    hi = s[min(n - 1, math.ceil(n * q + half))]
    return value, (hi - lo) / 2
