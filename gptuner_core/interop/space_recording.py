"""A brute-forced tuning space (:mod:`.tuning_spaces`) as a gptuner recording.

Mapping (``gptuner import --format t4|kerneltuner``):

* every parameter with more than one value is a knob ``-kt:NAME`` of an ``all_build_routes``
  database whose allowed values are the parameter's values as text (``16``, ``0.5``, ``true``;
  characters the route grammar reserves become ``_``); single-valued parameters are recorded in
  ``config["imported"]["fixed_parameters"]``. The database's ``tuner_version`` is
  ``kerneltuner-<hash of the knobs and values>``, so spaces of the same kernel on other GPUs match
  for ``--warm-start``;
* the default route (1.0x) is the first configuration of the file that was measured; it is record
  0, the other configurations follow in file order;
* a measured configuration is COMPLETE, its raw runtimes (ms) the samples, its compile time the
  build time; a failed one (compile or runtime failure) is BUILD_FAILED with the file's reason;
* a configuration absent from the file (or marked as violating the restrictions) is infeasible:
  the recording says ``config["space"] = "exhaustive"`` and the recorded evaluator answers it
  BUILD_FAILED with ``extra["infeasible"]`` — a spent build, as with a TensorRT route the network
  cannot honour.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import TuningSpaceError
from gptuner_core.interop.tuning_spaces import EXCLUDED
from gptuner_core.interop.tuning_spaces import MEASURED
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats


if TYPE_CHECKING:
    from gptuner_core.interop.tuning_spaces import Configuration
    from gptuner_core.interop.tuning_spaces import TuningSpace
    from gptuner_core.recording import Recording

KNOB_PREFIX = "-kt:"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedSpace:
    """The recording of an imported space and what the import counted."""

    recording: Recording
    product: int
    measured: int
    failed: int
    infeasible: int
    duplicates: int

    def summary(self) -> str:
        cfg = self.recording.config["imported"]
        opt, _ = self.recording.optimum()
        return (f"{cfg['format']} {Path(cfg['file']).name}: {len(self.recording.db)} knobs, "
                f"{self.product:,}-route product, {self.measured:,} measured, {self.failed:,} failed, "
                f"{self.infeasible:,} infeasible (absent); optimum {opt:.3g}x the default "
                f"(the first measured configuration)")


def knob_name(param: str) -> str:
    return KNOB_PREFIX + (re.sub(r"[^A-Za-z0-9_.]", "_", param) or "_")


def value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return re.sub(r"[\s|\[\]=,:]", "_", str(value)) or "_"


def _percentile(ordered: list[float], q: float) -> float:
    """numpy's default (linear) percentile of sorted values."""
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def latency_of(samples: tuple[float, ...]) -> LatencyStats:
    """Statistics of the recorded runtimes (pure Python: thousands of records per import)."""
    ordered = sorted(samples)
    n = len(ordered)
    mean = sum(ordered) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in ordered) / (n - 1)) if n > 1 else 0.0
    return LatencyStats(
        median_ms=_percentile(ordered, 50), mean_ms=mean, min_ms=ordered[0],
        p5_ms=_percentile(ordered, 5), p95_ms=_percentile(ordered, 95), p99_ms=_percentile(ordered, 99),
        cv=sd / mean if mean > 0 else 0.0, ci_low_ms=ordered[0], ci_high_ms=ordered[-1], n_samples=n,
        stop_reason="imported runtimes",
    )


def _texts(space: TuningSpace, name: str) -> tuple[str, ...]:
    texts = tuple(value_text(v) for v in space.parameters[name])
    if len(set(texts)) != len(texts):
        msg = (f"tuning space '{space.source}': parameter '{name}' has values that read the same "
               f"as route text ({', '.join(texts)})")
        raise TuningSpaceError(msg)
    return texts


def to_recording(space: TuningSpace, output: str = "") -> ImportedSpace:
    """The recording of ``space`` (nothing written); ``output`` is where it will be written."""
    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import Knob
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.recording import Recording

    src = space.source
    varying = [n for n, vals in space.parameters.items() if len(vals) > 1]
    if not varying:
        msg = f"tuning space '{src}': no parameter has more than one value (nothing to tune)"
        raise TuningSpaceError(msg)
    names = {n: knob_name(n) for n in varying}
    if len(set(names.values())) != len(names):
        msg = f"tuning space '{src}': parameter names {varying} collide as knob names"
        raise TuningSpaceError(msg)
    texts = {n: _texts(space, n) for n in varying}
    index = {n: {v: i for i, v in enumerate(space.parameters[n])} for n in varying}
    order = list(space.parameters)
    cols = [order.index(n) for n in varying]
    first = next((c for c in space.configurations if c.outcome == MEASURED), None)
    if first is None:
        msg = f"tuning space '{src}': no configuration was measured (nothing defines 1.0x)"
        raise TuningSpaceError(msg)

    def route(conf: Configuration) -> str:
        return " ".join(f"{names[n]}={texts[n][index[n][conf.values[j]]]}"
                        for n, j in zip(varying, cols, strict=True))

    base_route = dict(pair.split("=", 1) for pair in route(first).split())
    spec = [(names[n], texts[n]) for n in varying]
    version = "kerneltuner-" + hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:12]
    knobs = [Knob(name=k, values=vals, default=base_route[k], allowed_text=f"{k}=[{'|'.join(vals)}]",
                  help=f"kernel tunable parameter '{n}' (imported)")
             for n, (k, vals) in zip(varying, spec, strict=True)]
    db = KnobDatabase(version, knobs)
    expr_text = " ".join(k.allowed_text for k in knobs)
    expr = Expression.parse(expr_text, db)
    base_ms = latency_of(first.samples_ms).median_ms
    seen: set[str] = set()
    records: list[CandidateRecord] = []
    measured = failed = duplicates = 0
    for i, conf in [(space.configurations.index(first), first), *enumerate(space.configurations)]:
        if conf.outcome == EXCLUDED:
            continue
        text = route(conf)
        if text in seen:
            duplicates += conf is not first
            continue
        seen.add(text)
        records.append(_record(len(records), text, conf, i, base_ms))
        measured += conf.outcome == MEASURED
        failed += conf.outcome != MEASURED
    product = math.prod(len(v) for v in texts.values())
    fixed = {n: vals[0] for n, vals in space.parameters.items() if len(vals) == 1}
    config = {
        "model": output or src, "backend": "replay", "expression": expr_text, "search": "full",
        "space": "exhaustive", "model_family": space.kernel or version, "seed": 0,
        "imported": {
            "format": space.format, "file": src, "kernel": space.kernel, "device": space.device,
            "problem_size": space.problem_size, "objective": space.objective,
            "parameters": {names[n]: n for n in varying}, "fixed_parameters": fixed,
            "measured": measured, "failed": failed, "infeasible": product - len(records),
            "duplicates": duplicates,
        },
    }
    rec = Recording(source=output or src, db=db, expression=expr, search="full",
                    records=tuple(records), config=config)
    return ImportedSpace(recording=rec, product=product, measured=measured, failed=failed,
                         infeasible=product - len(records), duplicates=duplicates)


def _record(number: int, route: str, conf: Configuration, index: int, base_ms: float) -> CandidateRecord:
    info = {"search": "full", "index": index}  # index: the configuration's place in the file
    started = conf.timestamp
    took = (conf.compile_s or 0.0) + (conf.benchmark_s or 0.0)
    common = {"number": number, "requested_route": route, "effective_route": route, "strategy_info": info,
              "build_time_s": conf.compile_s, "started_at": started,
              "finished_at": None if started is None else started + took}
    if conf.outcome != MEASURED:
        phase = "build" if "compil" in conf.reason.lower() else "measure"
        return CandidateRecord(state=CandidateState.BUILD_FAILED, error=conf.reason, phase=phase, **common)
    latency = latency_of(conf.samples_ms)
    return CandidateRecord(state=CandidateState.COMPLETE, phase="measure", latency=latency,
                           samples_ms=conf.samples_ms, speedup=base_ms / latency.median_ms,
                           measure_time_s=conf.benchmark_s, **common)


def write_recording(imported: ImportedSpace, out: str | Path) -> None:
    """Write the recording JSON (gzipped when ``out`` ends in ``.gz``) atomically; never over a file."""
    import gzip

    path = Path(out)
    if path.exists():
        msg = f"import: '{path}' already exists (expected a new recording file)"
        raise TuningSpaceError(msg)
    data = json.dumps(imported.recording.to_json(), separators=(",", ":")).encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=1)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        msg = f"import: cannot write '{path}' ({exc.strerror or exc})"
        raise TuningSpaceError(msg) from None


def write_study(imported: ImportedSpace, study_dir: str | Path) -> None:
    """Write the recording as a finished study folder (built aside, then moved into place)."""
    import shutil

    path = Path(study_dir)
    if path.exists():
        msg = f"import: '{path}' already exists (expected a new study folder)"
        raise TuningSpaceError(msg)
    tmp = path.with_name(f".{path.name}.importing-{os.getpid()}")
    try:
        imported.recording.write_study(tmp)
        from gptuner_core.records import Verdict
        from gptuner_core.records import Winner
        from gptuner_core.storage import open_store

        opt, best = imported.recording.optimum()
        with open_store(tmp) as store:  # the recorded optimum, so show / explain / report open it
            store.set_winner(Winner(
                verdict=Verdict.NOT_REVALIDATED, number=best.number, speedup=opt, ci=None,
                best=best.number, best_speedup=opt, screening=True, method="recorded optimum",
                message=(f"recorded optimum #{best.number}: {opt:.3f}x the default (lowest recorded "
                         "median of an exhaustively imported space; not re-validated)"),
            ))
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
