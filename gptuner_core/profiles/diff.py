"""Aligned layer diff of two profiled candidates.

Layers of both profiles are grouped by the source-model nodes they compute: two runtime layers
fall into one group when they share an ONNX origin (union-find over origins), so a fused
``Conv+Relu`` of route A lines up with the ``QLinearConv``, ``DequantizeLinear`` and
``QuantizeLinear`` that route B runs for the same two nodes. Layers without an origin (torch
kernels, unmapped TensorRT layers) are matched by name.

Each group gets its time per inference in A and B as the lower quartile of its per-run times
(:data:`QUANTILE`: on a shared machine slow runs come from other processes, so a low quantile
estimates what the route itself costs), their difference and a noise level: the half-widths of
the quartiles' distribution-free 95 % CIs (binomial order statistics), combined in quadrature. A difference within noise is flagged ``significant=False`` and never listed among the
sources (the groups beyond their own noise that move time in the direction of the end-to-end
difference); the summary says separately whether the end-to-end difference itself is beyond noise. Rows are sorted by their contribution to the end-to-end difference (the sign of A's
total minus B's), so the first rows explain it and the last ones work against it. A profile's
total is the sum of its groups' times, so rows and totals always agree.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gptuner_core.profiles.origins import GLUE_OPS
from gptuner_core.profiles.records import quantile_and_halfwidth


if TYPE_CHECKING:
    from gptuner_core.profiles.records import LayerProfile
    from gptuner_core.profiles.records import LayerTime
    from gptuner_core.records import LatencyStats

Z95 = 1.96
#: quantile of the per-run times a group's time is read at (see the module docstring)
QUANTILE = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffRow:
    """One aligned group of layers.

    ``delta_ms`` is A minus B (positive: B is faster on this group); ``contribution`` is its share
    of the end-to-end difference of the profiles (signed; the rows sum to 1).
    """

    group: str
    origins: tuple[str, ...]
    op: str
    a_layers: tuple[str, ...]
    b_layers: tuple[str, ...]
    a_kinds: tuple[str, ...]
    b_kinds: tuple[str, ...]
    a_precision: str
    b_precision: str
    a_ms: float
    b_ms: float
    delta_ms: float
    noise_ms: float
    contribution: float
    changes: tuple[str, ...]

    @property
    def significant(self) -> bool:
        return abs(self.delta_ms) > self.noise_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerDiff:
    """The aligned diff of profile A against profile B."""

    label_a: str
    label_b: str
    rows: tuple[DiffRow, ...]
    total_a_ms: float
    total_b_ms: float
    noise_ms: float
    latency_a: LatencyStats | None = None
    latency_b: LatencyStats | None = None
    notes: tuple[str, ...] = ()

    @property
    def delta_ms(self) -> float:
        return self.total_a_ms - self.total_b_ms

    @property
    def significant(self) -> bool:
        """The difference of the profiles' total layer time exceeds their noise."""
        return abs(self.delta_ms) > self.noise_ms

    @property
    def latency_confirms(self) -> bool | None:
        """The measured latencies differ beyond their CIs, in the profiles' direction.

        The log ratio of the medians with a standard error from each candidate's 95 % CI (as the
        knob effects do); ``None`` when a latency is unknown.
        """
        a, b = self.latency_a, self.latency_b
        if a is None or b is None or a.median_ms <= 0 or b.median_ms <= 0:
            return None

        def se(lat: LatencyStats) -> float:
            lo, hi = lat.ci_low_ms, lat.ci_high_ms
            return (math.log(hi) - math.log(lo)) / (2 * Z95) if lo > 0 and hi > lo else 0.0

        d = math.log(a.median_ms) - math.log(b.median_ms)
        beyond = abs(d) > Z95 * math.hypot(se(a), se(b))
        return beyond and (d > 0) == (self.delta_ms > 0)

    def sources(self) -> tuple[DiffRow, ...]:
        """Groups beyond noise that move time in the direction of the end-to-end difference."""
        sign = 1.0 if self.delta_ms >= 0 else -1.0
        return tuple(r for r in self.rows if r.significant and r.delta_ms * sign > 0)

    def summary(self) -> str:
        """One or two sentences for the CLI and the page header."""
        a, b = self.total_a_ms, self.total_b_ms
        if not self.rows:
            return "no layers to compare"
        faster, slower = (self.label_b, self.label_a) if a >= b else (self.label_a, self.label_b)
        ratio = max(a, b) / min(a, b) if min(a, b) > 0 else float("inf")
        head = (
            f"{faster} spends {min(a, b):.4g} ms in layers vs {max(a, b):.4g} ms for {slower} "
            f"({ratio:.2f}x; profile noise ±{self.noise_ms:.2g} ms)"
        )
        src = self.sources()[:3]
        parts = [f"{r.group} [{'+'.join(r.a_kinds)} -> {'+'.join(r.b_kinds)}] {r.contribution:.0%}" for r in src]
        if not self.significant:
            text = head + "; the profiled end-to-end difference is within noise (the profiles alone, not the verdict)"
            if parts:
                text += "; layers that differ beyond their own noise: " + ", ".join(parts)
            return text
        text = head + "; sources: " + (", ".join(parts) or "no single layer beyond its own noise")
        if self.latency_confirms is False:
            text += " (the measured latencies do not confirm it beyond their CIs)"
        return text


def _groups(a: LayerProfile, b: LayerProfile) -> list[tuple[list[LayerTime], list[LayerTime]]]:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def keys(layer: LayerTime) -> list[str]:
        return [f"o:{o}" for o in layer.origins] or [f"n:{layer.name}"]

    for layer in a.layers + b.layers:
        ks = keys(layer)
        for k in ks[1:]:
            parent[find(k)] = find(ks[0])
    out: dict[str, tuple[list[LayerTime], list[LayerTime]]] = {}
    for side, prof in ((0, a), (1, b)):
        for layer in prof.layers:
            root = find(keys(layer)[0])
            out.setdefault(root, ([], []))[side].append(layer)
    return list(out.values())


def _runs(layers: list[LayerTime]) -> list[float]:
    n = min((len(la.run_ms) for la in layers), default=0)
    return [sum(la.run_ms[i] for la in layers) for i in range(n)]


def _stat(layers: list[LayerTime]) -> tuple[float, float]:
    """Time per run of a group (:data:`QUANTILE`) and its CI half-width (means without runs)."""
    if not layers:
        return 0.0, 0.0
    runs = _runs(layers)
    if len(runs) < 2:
        return sum(x.time_ms for x in layers), 0.0
    return quantile_and_halfwidth(runs, QUANTILE)


def _kinds(layers: list[LayerTime]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(la.kind for la in layers))


def _precision(layers: list[LayerTime]) -> str:
    compute = [la for la in layers if la.kind not in GLUE_OPS] or layers
    return "/".join(dict.fromkeys(la.precision for la in compute if la.precision))


def _generated(layers: list[LayerTime]) -> set[str]:
    """The generated kernels of a group, without Inductor's ordinal (``cpp_fused_relu_3``)."""
    return {re.sub(r"_\d+$", "", k) for la in layers for k in la.kernels}


def _changes(a: list[LayerTime], b: list[LayerTime], pa: str, pb: str) -> tuple[str, ...]:
    if not a:
        return ("only in B",)
    if not b:
        return ("only in A",)
    out = []
    ka, kb = _kinds(a), _kinds(b)
    if ka != kb:
        out.append(f"kernel {'+'.join(ka)} -> {'+'.join(kb)}")
    if pa != pb:
        out.append(f"precision {pa or '?'} -> {pb or '?'}")
    ga, gb = _generated(a), _generated(b)
    if ga != gb:
        out.append(f"generated kernels {'+'.join(sorted(ga - gb)) or '-'} -> {'+'.join(sorted(gb - ga)) or '-'}")
    fa = max((len(la.origins) for la in a), default=0)
    fb = max((len(la.origins) for la in b), default=0)
    if fa > 1 and fb <= 1:
        out.append(f"fusion split ({len(a)} -> {len(b)} layers)")
    elif fb > 1 and fa <= 1:
        out.append(f"fused ({len(a)} -> {len(b)} layers)")
    elif len(a) != len(b):
        out.append(f"layers {len(a)} -> {len(b)}")
    return tuple(out)


def _anchor(origins: tuple[str, ...], ops: dict[str, str], fallback: str) -> tuple[str, str]:
    """The group's main node: the first origin that is not a glue or activation op."""
    light = GLUE_OPS | {"Relu", "Sigmoid", "Tanh", "Clip", "Add", "Mul", "BatchNormalization"}
    for o in origins:
        if ops.get(o, "") not in light:
            return o, ops.get(o, "")
    if origins:
        return origins[0], ops.get(origins[0], "")
    return fallback, ""


def diff_profiles(
    a: LayerProfile,
    b: LayerProfile,
    *,
    label_a: str = "A",
    label_b: str = "B",
    latency_a: LatencyStats | None = None,
    latency_b: LatencyStats | None = None,
) -> LayerDiff:
    """Align ``a`` and ``b`` by ONNX origin and explain where their time differs.

    Args:
        a, b: the two profiles (any backend; origins align them, names otherwise).
        label_a, label_b: how the candidates are named in the summary (``"#0"``, ``"#7"``).
        latency_a, latency_b: the candidates' measured latency; when both are given, the
            end-to-end difference only counts as significant if their CIs do not overlap.
    """
    ops = {**b.origin_ops, **a.origin_ops}
    rank = {o: i for i, o in enumerate(ops)}
    groups = _groups(a, b)
    stats = [(_stat(la), _stat(lb)) for la, lb in groups]
    total_delta = sum(sa[0] - sb[0] for sa, sb in stats)
    rows = []
    for (la, lb), ((a_ms, a_se), (b_ms, b_se)) in zip(groups, stats, strict=True):
        seen = list(dict.fromkeys(o for x in la + lb for o in x.origins))
        origins = tuple(sorted(seen, key=lambda o: (rank.get(o, len(rank)), seen.index(o))))
        group, op = _anchor(origins, ops, (la or lb)[0].name)
        if len(origins) > 1:
            group += f" (+{len(origins) - 1})"
        pa, pb = _precision(la), _precision(lb)
        delta = a_ms - b_ms
        rows.append(DiffRow(
            group=group, origins=origins, op=op,
            a_layers=tuple(x.name for x in la), b_layers=tuple(x.name for x in lb),
            a_kinds=_kinds(la), b_kinds=_kinds(lb), a_precision=pa, b_precision=pb,
            a_ms=a_ms, b_ms=b_ms, delta_ms=delta, noise_ms=math.hypot(a_se, b_se),
            contribution=delta / total_delta if total_delta else 0.0,
            changes=_changes(la, lb, pa, pb),
        ))
    sign = 1.0 if total_delta >= 0 else -1.0
    rows.sort(key=lambda r: -r.delta_ms * sign)
    ta, tb = sum(sa[0] for sa, _ in stats), sum(sb[0] for _, sb in stats)
    noise = math.sqrt(sum(sa[1] ** 2 + sb[1] ** 2 for sa, sb in stats))
    notes = list(a.notes) + list(b.notes)
    if a.backend != b.backend:
        notes.append(f"profiles come from different backends ({a.backend} vs {b.backend}); only names can align")
    return LayerDiff(
        label_a=label_a, label_b=label_b, rows=tuple(rows), total_a_ms=ta,
        total_b_ms=tb, noise_ms=noise, latency_a=latency_a,
        latency_b=latency_b, notes=tuple(notes),
    )
