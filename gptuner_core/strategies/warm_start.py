"""Warm start: seed a new study with the best routes of earlier studies.

A study qualifies when it was recorded with the same knob database ``tuner_version`` as this
space's database, or for the same model family (``config["model_family"]``, else the model file's
stem with trailing digits/version suffixes stripped). Its eligible routes (COMPLETE, with a
latency) are ranked by speed-up, restricted to the knobs of this space (values this space does not
allow are dropped, so the route stays valid), de-duplicated, and the best ``top_n`` returned.
Strategies take them as ``warm_start=[...]`` and propose them right after the baseline.

A :class:`Prior` (:func:`load_prior`) carries *every* result of the earlier studies, not only the
best routes: model-based strategies (``bo``) train a surrogate on it and use it as the prior mean
and the feasibility prior of the new study's model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.routes import Route


if TYPE_CHECKING:
    from collections.abc import Iterable
    from collections.abc import Sequence

    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase


def model_family(config: dict[str, Any]) -> str:
    """``config["model_family"]`` or the model file stem without version-like suffixes."""
    if config.get("model_family"):
        return str(config["model_family"])
    stem = Path(str(config.get("model", ""))).stem.lower()
    return re.sub(r"([_\-.]?(v?\d+|fp32|fp16|int8|opset\d+))+$", "", stem)


def warm_start_routes(
    study_dirs: Iterable[str | Path],
    space: Expression,
    top_n: int = 3,
    *,
    db: KnobDatabase | None = None,
    model_family_name: str | None = None,
) -> list[Route]:
    """Best eligible routes of earlier studies that match this database or model family."""
    from gptuner_core.recording import load_recording

    allowed = {t.name: set(t.values) | {d} for t, d in zip(space.terms, space.defaults, strict=True)}
    ranked: list[tuple[float, str, Route]] = []
    for study in study_dirs:
        rec = load_recording(study)
        same_db = db is not None and rec.db.tuner_version == db.tuner_version
        same_family = model_family_name is not None and model_family(rec.config) == model_family_name
        if not (same_db or same_family) and (db is not None or model_family_name is not None):
            continue
        for r in rec.records:
            speedup = rec.speedup(r)
            if speedup is None:
                continue
            route = Route(tuple(
                (n, v) for n, v in Route.parse(r.requested_route).assignments
                if n in allowed and v in allowed[n]
            ))
            ranked.append((-speedup, str(rec.source), route))
    ranked.sort(key=lambda t: t[0])
    out: list[Route] = []
    seen: set[str] = set()
    defaults = dict(zip(space.names, space.defaults, strict=True))
    for _, _, route in ranked:
        key = " ".join(f"{n}={v}" for n, v in sorted(route.assignments) if defaults.get(n) != v)
        if key in seen or not key:
            continue
        seen.add(key)
        out.append(route)
        if len(out) >= top_n:
            break
    return out


def check_sources(sources: Sequence[str], db: KnobDatabase, family: str) -> None:
    """Each ``--warm-start`` source readable and tuned on these knobs (this knob database's
    ``tuner_version`` or this model family), else ConfigError naming it (``tune`` and ``replay``)."""
    from gptuner_core.errors import ConfigError
    from gptuner_core.errors import GptunerError
    from gptuner_core.recording import load_recording

    for source in sources:
        try:
            rec = load_recording(source)
        except GptunerError as exc:
            msg = f"--warm-start '{source}' is not a readable study ({exc})"
            raise ConfigError(msg) from None
        theirs = model_family(rec.config)
        if rec.db.tuner_version != db.tuner_version and theirs != family:
            msg = (f"--warm-start '{source}' was tuned on other knobs (expected knob database "
                   f"{db.tuner_version} or model family '{family}'; found {rec.db.tuner_version} and "
                   f"'{theirs}')")
            raise ConfigError(msg)


@dataclass(frozen=True, slots=True, kw_only=True)
class Prior:
    """What an earlier study or recording of the same knobs measured, for a model-based prior.

    ``results``: ``(route, median latency in ms)`` per route it evaluated, the latency ``None``
    for a route that failed there (build failure, crash, timeout, accuracy). Strategies that
    model the space (``bo``) fit a surrogate on it; others use only the ranked ``warm_start``
    routes.
    """

    sources: tuple[str, ...]
    results: tuple[tuple[Route, float | None], ...]
    #: every source recorded every feasible route (an imported brute-force space): a route
    #: absent from them is infeasible there
    exhaustive: bool = False

    def __len__(self) -> int:
        return len(self.results)


def load_prior(sources: Iterable[Any], space: Expression) -> Prior:
    """Every record of the given studies/recordings (paths or ``Recording``), restricted to the
    knobs of ``space``: measured routes with their median latency, failed ones with ``None``."""
    from gptuner_core.recording import load_recording

    names = set(space.names)
    results: list[tuple[Route, float | None]] = []
    labels = []
    exhaustive = True
    for source in sources:
        rec = load_recording(source)
        labels.append(str(rec.source))
        exhaustive = exhaustive and bool(getattr(rec, "exhaustive", False))
        for r in rec.records:
            if not r.state.is_finished():
                continue
            route = Route(tuple(
                (n, v) for n, v in Route.parse(r.requested_route).assignments if n in names
            ))
            ok = r.eligible and r.latency is not None and r.latency.median_ms > 0
            results.append((route, r.latency.median_ms if ok else None))  # type: ignore[union-attr]
    return Prior(sources=tuple(labels), results=tuple(results), exhaustive=exhaustive and bool(labels))
