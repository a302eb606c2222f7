"""Export a study as a tuning cache that ``trtexec --continue`` resumes.

trtexec resumes by *count*: it rebuilds its argv from the header (``argv[1:]`` minus the tuning
expression and cache flags, plus ``--tuneBuildRoutes=<tuning_expr> --tuningCacheFile=<file>``),
expands the expression in its own order, and skips as many phase-1 iterations as the file has
non-empty rows (``reconstructArgvForContinue``, trtexec.cpp). So a resumable export must

* hold only rows that are a *prefix* of trtexec's expansion order (fast for ``fast``/``mixed``,
  full for ``full``), written with trtexec's route strings and ``iter`` numbers;
* carry a header ``argv`` that rebuilds the study's build: the absolute model path, the shapes of
  dynamic inputs (``--minShapes/--optShapes/--maxShapes`` from the ``profiles`` option or the
  dataset), the builder options, the timing cache, ``--saveEngine``;
* use only TensorRT knobs: gptuner's ``-gptuner:precision`` is not a trtexec knob.

What cannot hold is said in :attr:`ExportResult.notes` and the export writes what trtexec *can*
resume: for a strategy trtexec does not have (random, tpe, gp, nsga2, race, mixed_noise) the prefix
of trtexec's full order the study covered; candidates outside the prefix are left out and
counted. Studies of other backends, or with a varied precision knob, are written in evaluation
order (viewable, importable) and marked not resumable. ``gpu_time`` is gptuner's median in ms
(trtexec writes its mean); gptuner's accuracy references are not carried (trtexec needs raw
``--loadRefOutputs`` files), so resumed iterations are not accuracy-checked.
"""

from __future__ import annotations

import shlex
import struct
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import GptunerError
from gptuner_core.expressions import Expression
from gptuner_core.interop.cache_records import ACCURACY_ALGORITHMS
from gptuner_core.interop.cache_records import CacheHeader
from gptuner_core.interop.cache_records import CacheRow
from gptuner_core.interop.cache_records import TuningCache
from gptuner_core.knobs import KnobDatabase
from gptuner_core.records import CandidateState
from gptuner_core.routes import Route


if TYPE_CHECKING:
    from gptuner_core.records import CandidateRecord
    from gptuner_core.storage import StudyStore


OWN_PREFIX = "-gptuner:"
TRT_BACKENDS = ("tensorrt", "trtexec")
TRTEXEC_SEARCHES = ("fast", "full", "mixed")
CRASHED = (CandidateState.BUILD_FAILED, CandidateState.CRASHED, CandidateState.TIMED_OUT)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportResult:
    """The cache written, whether ``trtexec --continue`` can resume it, and why not / what was left out."""

    cache: TuningCache
    resumable: bool
    notes: tuple[str, ...] = ()
    left_out: int = 0
    search: str = "fast"
    extra: dict[str, Any] = field(default_factory=dict)


def as_float(x: float) -> float:
    """A C++ ``float`` option as trtexec's header writes it (promoted to double)."""
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def _row(number: int, route: str, rec: CandidateRecord) -> CacheRow:
    crash = rec.state in CRASHED
    error = ""
    if crash:
        error = rec.error or rec.state.value
    elif rec.state is CandidateState.ACCURACY_FAILED:
        error = "child exited with status 1"
    losses = dict(rec.accuracy.losses) if rec.accuracy and not crash and rec.accuracy.losses else None
    return CacheRow(
        iter=number,
        build_route=route,
        crash=crash,
        error_message=error,
        accuracy_loss=losses,
        gpu_time=rec.latency.median_ms if rec.latency and not crash else None,
    )


def _feed_shapes(cfg: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    path = cfg.get("dataset")
    if not path:
        return {}
    import numpy as np

    batch = int(cfg.get("batch_size") or 1)
    with np.load(str(path), allow_pickle=False) as data:
        return {k: (batch, *data[k].shape[1:]) for k in data.files if k != "labels"}


def _build_flags(cfg: dict[str, Any], model: Path, study: Path, notes: list[str]) -> list[str]:
    from gptuner_core.backends.tensorrt import trtexec_protocol as proto
    from gptuner_core.backends.tensorrt.build import TIMING_CACHE_NAME
    from gptuner_core.backends.tensorrt.build import onnx_input_specs
    from gptuner_core.backends.tensorrt.build import parse_profiles
    from gptuner_core.backends.tensorrt.build import resolve_profiles

    opts = dict(cfg.get("backend_options") or {})
    try:
        profiles = resolve_profiles(onnx_input_specs(model), parse_profiles(opts.get("profiles") or {}), _feed_shapes(cfg))
    except (GptunerError, OSError, ValueError, KeyError) as exc:
        notes.append(f"shapes of dynamic inputs unknown ({exc}); add --minShapes/--optShapes/--maxShapes to the header argv")
        profiles = parse_profiles(opts.get("profiles") or {})
    cache = None
    if opts.get("timing_cache", "shared") == "shared":
        cache = Path(opts.get("timing_cache_path") or study / TIMING_CACHE_NAME).resolve()
    return proto.build_flags(opts, profiles, cache) + list(opts.get("extra_args") or [])


def export_study(store: StudyStore, path: str | Path, *, study_dir: str | Path, all_rows: bool = False) -> ExportResult:
    """Build the export of ``store`` for ``path`` (written by the caller with ``result.cache.write``)."""
    from gptuner_core.interop.study_cache import study_to_cache

    cfg = store.config()
    backend = str(cfg.get("backend", ""))
    notes: list[str] = []
    if backend not in TRT_BACKENDS or all_rows:
        cache = study_to_cache(store)
        why = "--all-rows: every candidate in evaluation order" if all_rows else (
            f"the study ran on backend {backend!r}; its knobs are not TensorRT knobs")
        return ExportResult(cache=cache, resumable=False, notes=(f"not resumable by trtexec --continue: {why}",))
    full_db = KnobDatabase.from_json(store.get_meta("knob_db") or {"tuner_options": []})
    db = KnobDatabase(full_db.tuner_version, [k for k in full_db.knobs if not k.name.startswith(OWN_PREFIX)])
    terms = str(cfg.get("expression", "")).split()
    own = [t for t in terms if t.startswith(OWN_PREFIX)]
    own_expr = Expression.parse(" ".join(own), full_db) if own else None
    if own_expr is not None and (own_expr.variable_terms or any(v != "fp32" for t in own_expr.terms for v in t.values)):
        cache = study_to_cache(store)
        return ExportResult(cache=cache, resumable=False, notes=(
            f"not resumable by trtexec --continue: {' '.join(own)} is gptuner's ONNX precision transform, "
            "which trtexec cannot vary or apply; rows written in evaluation order",))
    expr_text = " ".join(t for t in terms if not t.startswith(OWN_PREFIX))
    expr = Expression.parse(expr_text, db)
    strategy = str(cfg.get("search", "fast"))
    search = strategy if strategy in TRTEXEC_SEARCHES else "full"
    order = "full" if search == "full" else "fast"
    if strategy not in TRTEXEC_SEARCHES:
        notes.append(f"trtexec has no search {strategy!r}: wrote the prefix of trtexec's full order "
                     "the study covered, for --tuningSearch=full")
    if search == "mixed":
        notes.append("mixed: only phase-1 rows are written; trtexec restarts phase 2 itself, and skips it "
                     "when the resumed run no longer contains iteration 0 (its baseline)")
    by_key: dict[str, CandidateRecord] = {}
    for rec in store.candidates():
        if rec.state.is_finished():
            trt_only = Route(tuple((n, v) for n, v in Route.parse(rec.requested_route).assignments if not n.startswith(OWN_PREFIX)))
            by_key.setdefault(trt_only.key(db), rec)
    rows: list[CacheRow] = []
    used: set[str] = set()
    for i, route in enumerate(expr.iter_routes(order)):
        rec = by_key.get(route.key(db))
        if rec is None:
            break
        used.add(route.key(db))
        rows.append(_row(i, str(route), rec))
    left_out = len(set(by_key) - used)
    if left_out:
        notes.append(f"{left_out} evaluated candidate(s) are not in the prefix of trtexec's {order} order "
                     f"(it resumes by row count) and were left out")
    study = Path(study_dir).resolve()
    model = Path(str(cfg.get("model", ""))).resolve()
    target = Path(path).resolve()
    engine = Path(cfg["output"]).resolve() if cfg.get("output") else target.with_name(target.name + ".best.plan")
    metric = str(cfg.get("metric", "l0"))
    argv = ["trtexec", f"--onnx={model}", *_build_flags(cfg, model, study, notes)]
    argv += [f"--tuneBuildRoutes={expr_text}", f"--tuningSearch={search}", f"--tuningCacheFile={target}", f"--saveEngine={engine}"]
    if metric in ACCURACY_ALGORITHMS:
        argv.append(f"--accuracyAlgorithm={metric}")
    if metric == "l0":  # --atol/--rtol are only valid with l0
        argv += [f"--atol={cfg.get('atol', 1e-5)}", f"--rtol={cfg.get('rtol', 1e-5)}"]
    eps = cfg.get("epsilon") or 0.0
    if eps:
        argv.append(f"--accuracyThreshold={eps}")
        notes.append("gptuner's accuracy references are not carried over (trtexec needs raw --loadInputs/"
                     "--loadRefOutputs files): resumed iterations are not accuracy-checked")
    l0 = metric == "l0"
    header = CacheHeader(
        tuner_version=db.tuner_version,
        accuracy_algorithm=ACCURACY_ALGORITHMS.get(metric, "L0"),
        accuracy_parameter={"atol": as_float(cfg.get("atol", 1e-5) if l0 else 1e-5),
                            "rtol": as_float(cfg.get("rtol", 1e-5) if l0 else 1e-5), "epsilon": as_float(eps)},
        searching_algorithm=search,
        command_line=shlex.join(argv),
        default_build_route=str(Route.default(db)),
        tuning_expr=expr_text,
        files={"onnx": str(model), "save_engine": str(engine)},
        argv=tuple(argv),
    )
    notes.append("gpu_time is gptuner's median latency in ms (trtexec writes its mean GPU compute time)")
    return ExportResult(cache=TuningCache(header=header, rows=tuple(rows)), resumable=True, notes=tuple(notes),
                        left_out=left_out, search=search)
