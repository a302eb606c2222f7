"""Studies <-> trtexec tuning caches (JSONL), so results move both ways.

:func:`study_to_cache` writes trtexec's header and one row per candidate in evaluation order
(``gpu_time`` is our median in ms; trtexec writes its mean): a viewable, importable file, but not
one ``trtexec --continue`` resumes correctly, since trtexec skips rows by count in its own order;
:mod:`gptuner_core.interop.trtexec_export` writes the resumable form. Import turns a cache trtexec (or we) wrote into a study
that ``gptuner show`` and the dashboard open like any other.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.errors import StoreError
from gptuner_core.interop.trtexec_cache import ACCURACY_ALGORITHMS
from gptuner_core.interop.trtexec_cache import CacheHeader
from gptuner_core.interop.trtexec_cache import CacheRow
from gptuner_core.interop.trtexec_cache import TuningCache
from gptuner_core.interop.trtexec_cache import accuracy_failed
from gptuner_core.interop.trtexec_cache import read_tuning_cache
from gptuner_core.knobs import Knob
from gptuner_core.knobs import KnobDatabase
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.routes import Route


if TYPE_CHECKING:
    from gptuner_core.storage import StudyStore

DISPLAY = dict(ACCURACY_ALGORITHMS)
CLI = {v: k for k, v in DISPLAY.items()}
_KNOB = re.compile(r"-[^\s=\[\]|]+")
_VALUE = re.compile(r"[^\s=\[\]|]+")
CRASHED = (CandidateState.BUILD_FAILED, CandidateState.CRASHED, CandidateState.TIMED_OUT)


def study_to_cache(store: StudyStore) -> TuningCache:
    cfg = store.config()
    db = KnobDatabase.from_json(store.get_meta("knob_db") or {"tuner_options": []})
    search = cfg.get("search", "fast")
    argv = ["trtexec", f"--onnx={cfg.get('model', '')}"]
    if cfg.get("expression"):
        argv.append(f"--tuneBuildRoutes={cfg['expression']}")
    argv.append(f"--tuningSearch={search if search in ('fast', 'full', 'mixed') else 'fast'}")
    if cfg.get("epsilon"):
        argv.append(f"--accuracyThreshold={cfg['epsilon']}")
        argv.append(f"--accuracyAlgorithm={cfg.get('metric', 'l2')}")
    header = CacheHeader(
        tuner_version=db.tuner_version,
        accuracy_algorithm=DISPLAY.get(cfg.get("metric", "l0"), "L0"),
        accuracy_parameter={
            "atol": cfg.get("atol", 1e-5), "rtol": cfg.get("rtol", 1e-5),
            "epsilon": cfg.get("epsilon") or 0.0,
        },
        searching_algorithm=search,
        command_line=" ".join(shlex.quote(a) for a in argv),
        default_build_route=str(Route.default(db)),
        tuning_expr=cfg.get("expression", ""),
        files={"onnx": cfg.get("model", ""), "save_engine": cfg.get("output") or "",
               "inputs": {}, "ref_outputs": {}},
        argv=tuple(argv),
    )
    rows = []
    for rec in store.candidates():
        if not rec.state.is_finished():
            continue
        crash = rec.state in CRASHED
        error = ""
        if crash:
            error = rec.error or rec.state.value
        elif rec.state is CandidateState.ACCURACY_FAILED:
            error = "child exited with status 1"
        rows.append(CacheRow(
            iter=rec.number,
            build_route=rec.requested_route,
            crash=crash,
            error_message=error,
            accuracy_loss=dict(rec.accuracy.losses) if rec.accuracy and not crash else None,
            gpu_time=rec.latency.median_ms if rec.latency and not crash else None,
        ))
    return TuningCache(header=header, rows=tuple(rows))


def _knob_db(header: CacheHeader) -> KnobDatabase:
    knobs: dict[str, Knob] = {}
    for name, value in Route.parse(header.default_build_route).assignments:
        knobs[name] = Knob(name=name, values=None, default=value, allowed_text=f"{name}=int32_t")
    for token in header.tuning_expr.split():
        name = token.partition("=")[0]
        if name.startswith("-") and name not in knobs:
            knobs[name] = Knob(name=name, values=None, default="", allowed_text=f"{name}=int32_t")
    return KnobDatabase(header.tuner_version, list(knobs.values()))


def cache_to_records(cache: TuningCache) -> list[CandidateRecord]:
    """One record per row; numbers follow file order (mixed phase-2 rows restart ``iter``)."""
    header = cache.header
    metric = CLI.get(header.accuracy_algorithm, "l0")
    out = []
    baseline_ms = None
    for number, row in enumerate(cache.rows):
        if row.crash:
            state = CandidateState.CRASHED
        elif accuracy_failed(row, header):
            state = CandidateState.ACCURACY_FAILED
        else:
            state = CandidateState.COMPLETE
        latency = None
        if row.gpu_time is not None and not row.crash:
            t = float(row.gpu_time)
            latency = LatencyStats(
                median_ms=t, mean_ms=t, min_ms=t, p5_ms=t, p95_ms=t, p99_ms=t, cv=0.0,
                ci_low_ms=t, ci_high_ms=t, n_samples=1, stop_reason="imported (trtexec mean)",
            )
            if number == 0:
                baseline_ms = t
        speedup = baseline_ms / latency.median_ms if (latency and baseline_ms) else None
        out.append(CandidateRecord(
            number=number,
            requested_route=row.build_route,
            state=state,
            error=row.error_message or None,
            accuracy=AccuracyResult(metric=metric, losses=dict(row.accuracy_loss))
            if row.accuracy_loss is not None else None,
            latency=latency,
            speedup=speedup,
            strategy_info={"iter": row.iter, "phase": row.phase},
        ))
    return out


def _check_iters(cache: TuningCache, label: str) -> None:
    """Each ``iter`` once per run of the file (a run starts again at iter 0)."""
    from gptuner_core.errors import TuningCacheError

    seen: dict[tuple[int, int], int] = {}
    for number, row in enumerate(cache.rows, start=2):
        first = seen.setdefault((row.phase, row.iter), number)
        if first != number:
            msg = (f"{label}: line {number}: iter {row.iter} repeats line {first}'s (expected each "
                   "iteration once; a new run starts again at iter 0)")
            raise TuningCacheError(msg)


def check_routes(cache: TuningCache, label: str) -> None:
    """The header's ``tuning_expr`` and ``default_build_route`` and every row's route parse with
    trtexec's grammar (each knob taking the values the file itself uses), before any write."""
    from gptuner_core.errors import ExpressionError
    from gptuner_core.errors import GptunerError
    from gptuner_core.errors import TuningCacheError
    from gptuner_core.expression_grammar import split_values
    from gptuner_core.expression_grammar import tokenize
    from gptuner_core.expressions import Expression

    h = cache.header
    if not cache.rows:
        msg = f"{label}: no iteration rows after the header (expected at least the default route's, iter 0)"
        raise TuningCacheError(msg)
    _check_iters(cache, label)
    where, text = "line 1: field 'default_build_route'", h.default_build_route
    try:
        values: dict[str, set[str]] = {}
        defaults = dict(Route.parse(h.default_build_route).assignments)
        used: dict[str, int] = {}  # knob -> first line that sets it
        for number, row in enumerate(cache.rows, start=2):
            where, text = f"line {number}: field 'build_route'", row.build_route
            for name, value in Route.parse(row.build_route).assignments:
                values.setdefault(name, set()).add(value)
                used.setdefault(name, number)
        where, text = "line 1: field 'tuning_expr'", h.tuning_expr
        tuned = set()
        for token in tokenize(h.tuning_expr):
            name, _, rest = token.partition("=")
            inner = rest.strip()
            listed = split_values(inner[1:-1]) if inner.startswith("[") and inner.endswith("]") else (inner,)
            values.setdefault(name.strip(), set()).update(listed)
            tuned.add(name.strip())
        unknown = sorted((line, n) for n, line in used.items() if n not in tuned and n not in defaults)
        for name, value in defaults.items():
            values.setdefault(name, set()).add(value)
        odd = sorted(f"{n}={v}" for n, vs in values.items() for v in vs
                     if not _KNOB.fullmatch(n) or not _VALUE.fullmatch(v))
        if odd:
            msg = f"{odd[0]} is not -knob=value (a knob name starting with '-', one value or [a|b])"
            raise ExpressionError(msg)
        knobs = [Knob(name=n, values=tuple(sorted(v)), default=defaults.get(n, min(v)))
                 for n, v in values.items() if v]
        if h.tuning_expr.strip():
            Expression.parse(h.tuning_expr, KnobDatabase(h.tuner_version, knobs))
    except GptunerError as exc:
        msg = f"{label}: {where} {text!r} does not parse ({exc}); expected trtexec's route syntax"
        raise TuningCacheError(msg) from None
    if unknown:
        line, name = unknown[0]
        msg = (f"{label}: line {line}: field 'build_route' sets knob {name}, which neither the "
               f"header's tuning_expr nor its default_build_route names (expected one of "
               f"{sorted(tuned | set(defaults))})")
        raise TuningCacheError(msg)


def import_cache(path: str | Path, study_dir: str | Path) -> int:
    """Create a study in ``study_dir`` from a trtexec tuning cache; return the rows imported."""
    from gptuner_core.storage import open_store

    cache = read_tuning_cache(path)
    check_routes(cache, f"tuning cache '{path}'")
    records = cache_to_records(cache)  # everything computed before the folder is made
    study = Path(study_dir)
    if (study / "study.sqlite").exists():
        msg = f"study folder '{study}' already holds a study; import into a new folder"
        raise StoreError(msg)
    study.mkdir(parents=True, exist_ok=True)
    h = cache.header
    eps = h.epsilon
    config = {
        "model": h.files.get("onnx", "") if isinstance(h.files, dict) else "",
        "backend": "trtexec",
        "expression": h.tuning_expr,
        "search": h.searching_algorithm,
        "metric": CLI.get(h.accuracy_algorithm, "l0"),
        "epsilon": eps or None,
        "imported_from": str(Path(path).resolve()),
    }
    fingerprint = {"backend": "trtexec", "tuner_version": h.tuner_version,
                   "source": f"trtexec tuning cache {Path(path).name}"}
    with open_store(study) as store:
        store.init_study(config, fingerprint)
        store.set_meta("knob_db", _knob_db(h).to_json())
        for rec in records:
            store.put_candidate(rec)
        best = cache.best()
        if best is not None and records:
            number = cache.rows.index(best)
            store.set_meta("winner", {
                "number": number, "speedup": records[number].speedup, "ci": None,
                "significant": None,
                "message": "imported from trtexec: best = lowest single mean (not re-validated)",
            })
        store.set_meta("status", "finished")
        store.set_meta("status_message", f"imported {len(records)} rows from {path}")
        for w in cache.warnings:
            store.add_event("warning", {"message": w})
    return len(records)
