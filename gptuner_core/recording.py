"""Replay recorded studies: "what would strategy X have found with budget B on my sweep?".

A :class:`Recording` holds the knob database, the expression and the candidate records of a study
recorded earlier with real measurements, either a study folder (read through
``open_store(study_dir, readonly=True)``) or a recording JSON written by
``benchmarks/record_sweep.py`` (``{"format": "gptuner-recording/1", "knob_db", "config",
"candidates"}``). :func:`simulate` drives a strategy against it in-process, answering each
proposal by :meth:`Route.key`, deterministically and without spawning anything:

* a route missing from the recording is answered as BUILD_FAILED ("not in the recording") and
  listed in :attr:`SimulationResult.missing`;
* ``Proposal.measure_scale`` < 1 answers with the first ``ceil(scale × n)`` recorded samples (a
  shorter measurement of the same real run);
* ``Proposal.build_timeout_factor`` answers TIMED_OUT when the recorded build time exceeds that
  many times the default route's;
* a race re-measurement (``info["remeasure_of"]``) replaces that record, as the tuner does, and
  does not count as a build.

The study's pick is the eligible route with the lowest *observed* median (what the strategy saw);
its value is the *recorded* speed-up of that route, so a strategy fooled by short measurements
pays for it. ``found_optimum_fraction`` = that speed-up / the best recorded speed-up.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ConfigError
from gptuner_core.errors import StoreError
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats
from gptuner_core.routes import Route


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.strategies import Proposal

RECORDING_FORMAT = "gptuner-recording/1"


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """A recorded study: database, expression, records indexed by route key."""

    source: str
    db: KnobDatabase
    expression: Expression
    search: str
    records: tuple[CandidateRecord, ...]
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def by_key(self) -> dict[str, CandidateRecord]:
        """One record per route key: the eligible one with the most samples wins."""
        out: dict[str, CandidateRecord] = {}
        for rec in self.records:
            key = Route.parse(rec.requested_route).key(self.db)
            old = out.get(key)
            if old is None or (rec.eligible, len(rec.samples_ms)) > (old.eligible, len(old.samples_ms)):
                out[key] = rec
        return out

    @property
    def baseline(self) -> CandidateRecord:
        key = self.expression.baseline().key(self.db)
        rec = self.by_key.get(key)
        if rec is None or rec.latency is None:
            msg = f"recording {self.source}: the default route has no latency (cannot define 1.0x)"
            raise ConfigError(msg)
        return rec

    def speedup(self, rec: CandidateRecord) -> float | None:
        """Recorded speed-up against the recorded baseline (``None`` unless eligible)."""
        if not rec.eligible or rec.latency is None:
            return None
        if rec.speedup is not None:
            return rec.speedup
        return self.baseline.latency.median_ms / rec.latency.median_ms  # type: ignore[union-attr]

    def optimum(self) -> tuple[float, CandidateRecord]:
        best = max(
            ((s, r) for r in self.records if (s := self.speedup(r)) is not None),
            key=lambda sr: sr[0],
        )
        return best

    def to_json(self) -> dict[str, Any]:
        return {
            "format": RECORDING_FORMAT,
            "knob_db": self.db.to_json(),
            "config": {**self.config, "expression": str(self.expression), "search": self.search},
            "candidates": [r.to_json() for r in self.records],
        }

    def write_study(self, study_dir: str | Path) -> None:
        """Write this recording as a study folder through the store API."""
        from gptuner_core.storage import open_store

        with open_store(study_dir) as store:
            store.init_study(self.to_json()["config"], {"recording": self.source})
            store.set_meta("knob_db", self.db.to_json())
            for rec in self.records:
                store.put_candidate(rec)
            store.set_meta("status", "finished")


def _inputs_from_fingerprint(fp: dict[str, Any]) -> list[dict[str, Any]]:
    """``["input:tensor(float):['batch', 64]", ...]`` -> ``[{"name", "dtype", "shape"}]``."""
    import ast

    out = []
    for text in fp.get("inputs") or []:
        try:
            name, dtype, shape = str(text).rsplit(":", 2)
            out.append({"name": name, "dtype": dtype, "shape": list(ast.literal_eval(shape))})
        except (ValueError, SyntaxError):
            continue
    return out


def load_recording(source: str | Path | Recording) -> Recording:
    """A study folder (``study.sqlite`` inside) or a recording JSON file."""
    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase

    if isinstance(source, Recording):
        return source
    path = Path(source)
    if path.is_dir():
        from gptuner_core.storage import open_store

        with open_store(path, readonly=True) as store:
            config = dict(store.config())
            db_json = store.get_meta("knob_db")
            records = store.candidates(with_samples=True)
            if "inputs" not in config:  # the model's inputs, as the fingerprint recorded them
                config["inputs"] = _inputs_from_fingerprint(store.fingerprint())
        if db_json is None:
            msg = f"recording '{path}': the study has no 'knob_db' meta (expected one written by the tuner)"
            raise StoreError(msg)
    elif path.is_file():
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            msg = f"recording '{path}': cannot read a recording JSON ({exc})"
            raise ConfigError(msg) from None
        if not isinstance(doc, dict) or doc.get("format") != RECORDING_FORMAT:
            got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
            msg = f"recording '{path}': expected format '{RECORDING_FORMAT}' (got {got!r})"
            raise ConfigError(msg)
        config, db_json = doc.get("config", {}), doc.get("knob_db")
        records = [CandidateRecord.from_json(r) for r in doc.get("candidates", [])]
    else:
        msg = f"recording '{path}': no such study folder or recording file"
        raise ConfigError(msg)
    db = KnobDatabase.from_json(db_json, source=f"'{path}' knob_db")
    if not config.get("expression"):
        msg = f"recording '{path}': the study config has no 'expression'"
        raise ConfigError(msg)
    expr = Expression.parse(config["expression"], db)
    finished = tuple(r for r in records if r.state.is_finished())
    return Recording(source=str(path), db=db, expression=expr, search=config.get("search", ""),
                     records=finished, config=dict(config))


# -- answering proposals ---------------------------------------------------------------------
def _stats_of(samples: Sequence[float], like: LatencyStats) -> LatencyStats:
    import numpy as np

    a = np.asarray(samples, dtype=float)
    mean = float(a.mean())
    return LatencyStats(
        median_ms=float(np.median(a)), mean_ms=mean, min_ms=float(a.min()),
        p5_ms=float(np.percentile(a, 5)), p95_ms=float(np.percentile(a, 95)),
        p99_ms=float(np.percentile(a, 99)),
        cv=float(a.std(ddof=1) / mean) if a.size > 1 and mean > 0 else 0.0,
        ci_low_ms=float(a.min()), ci_high_ms=float(a.max()), n_samples=int(a.size),
        calls_per_sample=like.calls_per_sample, warmup_calls=like.warmup_calls,
        stop_reason="replayed prefix of the recorded samples",
    )


class Answerer:
    """Answers proposals from a recording (shared by :func:`simulate` and the replay backend)."""

    def __init__(self, recording: Recording) -> None:
        self.rec = recording
        self.index = recording.by_key
        self.base = recording.baseline
        self.missing: list[str] = []

    def answer(self, proposal: Proposal, number: int) -> CandidateRecord:
        route = proposal.route
        key = route.key(self.rec.db)
        found = self.index.get(key)
        info = dict(proposal.info)
        if found is None:
            self.missing.append(str(route))
            return CandidateRecord(
                number=number, requested_route=str(route), state=CandidateState.BUILD_FAILED,
                error=f"route not in the recording {self.rec.source}", phase="build",
                strategy_info=info,
            )
        out = found.replace(number=number, requested_route=str(route), strategy_info=info)
        factor = proposal.build_timeout_factor
        base_build = self.base.build_time_s
        if (
            factor and base_build and found.build_time_s is not None
            and found.build_time_s > factor * base_build
        ):
            return out.replace(
                state=CandidateState.TIMED_OUT, latency=None, samples_ms=(), speedup=None,
                speedup_ci=None, phase="build",
                error=f"build exceeded {factor:g}x the default's build time ({base_build:.3g} s)",
            )
        if proposal.measure_scale < 1 and found.latency is not None and found.samples_ms:
            n = max(1, math.ceil(proposal.measure_scale * len(found.samples_ms)))
            stats = _stats_of(found.samples_ms[:n], found.latency)
            out = out.replace(
                latency=stats, samples_ms=tuple(found.samples_ms[:n]), speedup_ci=None,
                speedup=self.base.latency.median_ms / stats.median_ms,  # type: ignore[union-attr]
            )
        return out


# -- simulation ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class TraceStep:
    builds: int
    number: int
    route: str
    state: str
    observed_ms: float | None
    recorded_speedup: float | None
    best_speedup: float
    info: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationResult:
    """Outcome of one replayed search.

    ``best_speedup``: recorded speed-up of the route the study would pick; ``builds_used``:
    candidates evaluated (re-measurements excluded); ``found_optimum_fraction``: best_speedup /
    the recording's optimum; ``missing``: proposed routes absent from the recording.
    """

    strategy: str
    seed: int
    budget: int
    best_speedup: float
    best_route: str
    builds_used: int
    remeasurements: int
    found_optimum_fraction: float
    optimum_speedup: float
    optimum_route: str
    space_size: int
    missing: tuple[str, ...]
    duplicates: tuple[str, ...]
    exhausted: bool
    trace: tuple[TraceStep, ...]

    def to_json(self) -> dict[str, Any]:
        import dataclasses

        return dataclasses.asdict(self)


def parse_budget(budget: int | float | str, space_size: int) -> int:
    """``12`` (builds), ``"12"``, ``"20%"`` or ``0.2`` (a fraction of the full space)."""
    try:
        if isinstance(budget, str):
            text = budget.strip()
            if text.endswith("%"):
                value = float(text[:-1]) / 100.0
                n = math.ceil(value * space_size)
            else:
                n = int(text)
        elif isinstance(budget, float) and 0 < budget < 1:
            n = math.ceil(budget * space_size)
        else:
            n = int(budget)
    except ValueError:
        msg = f"budget must be a number of builds or a percentage like '20%' (got {budget!r})"
        raise ConfigError(msg) from None
    if n < 1:
        msg = f"budget must allow at least 1 build (got {budget!r} of a {space_size}-route space)"
        raise ConfigError(msg)
    return n


def simulate(
    strategy_name: str,
    recorded: str | Path | Recording,
    budget: int | float | str,
    seed: int = 0,
    *,
    warm_start: Sequence[Route] = (),
    **options: Any,
) -> SimulationResult:
    """Replay ``strategy_name`` on a recorded study for at most ``budget`` builds."""
    from gptuner_core.strategies import get_strategy

    recording = load_recording(recorded)
    space = recording.expression.count("full")
    n_budget = parse_budget(budget, space)
    strategy = get_strategy(
        strategy_name, recording.expression, seed=seed, db=recording.db,
        warm_start=warm_start, **options,
    )
    answerer = Answerer(recording)
    history: list[CandidateRecord] = []
    seen: set[str] = set()
    duplicates: list[str] = []
    trace: list[TraceStep] = []
    remeasures = 0
    exhausted = False
    best = 0.0
    guard = 0
    while len(history) < n_budget:
        proposal = strategy.ask(history)
        if proposal is None:
            exhausted = True
            break
        guard += 1
        if guard > 100 * (n_budget + 10):
            msg = f"strategy '{strategy_name}' kept re-measuring without building (bug)"
            raise RuntimeError(msg)
        key = proposal.route.key(recording.db)
        remeasure_of = proposal.info.get("remeasure_of")
        if remeasure_of is not None:
            idx = next((i for i, r in enumerate(history) if r.number == remeasure_of), None)
            if idx is None or history[idx].requested_route != str(proposal.route):
                duplicates.append(str(proposal.route))
                continue
            rec = answerer.answer(proposal, int(remeasure_of))
            info = {**history[idx].strategy_info, **proposal.info}
            history[idx] = rec.replace(strategy_info=info)
            remeasures += 1
        else:
            if key in seen:
                duplicates.append(str(proposal.route))
            seen.add(key)
            rec = answerer.answer(proposal, len(history))
            history.append(rec)
        strategy.tell(rec)
        picked = _pick(history, recording.db)
        best = (recording.speedup(answerer.index[picked]) or 0.0) if picked else 0.0
        trace.append(TraceStep(
            builds=len(history), number=rec.number, route=str(proposal.route), state=rec.state.value,
            observed_ms=rec.latency.median_ms if rec.latency else None,
            recorded_speedup=recording.speedup(answerer.index[key]) if key in answerer.index else None,
            best_speedup=best, info=dict(proposal.info),
        ))
    picked = _pick(history, recording.db)
    opt, opt_rec = recording.optimum()
    best = (recording.speedup(answerer.index[picked]) or 0.0) if picked else 0.0
    return SimulationResult(
        strategy=strategy_name, seed=seed, budget=n_budget, best_speedup=best,
        best_route=picked or "", builds_used=len(history), remeasurements=remeasures,
        found_optimum_fraction=best / opt if opt > 0 else 0.0, optimum_speedup=opt,
        optimum_route=opt_rec.requested_route, space_size=space,
        missing=tuple(answerer.missing), duplicates=tuple(duplicates), exhausted=exhausted,
        trace=tuple(trace),
    )


def _pick(history: Sequence[CandidateRecord], db: KnobDatabase | None = None) -> str | None:
    """Key of the eligible record with the lowest observed median."""
    best: tuple[float, str] | None = None
    for rec in history:
        if rec.eligible and rec.latency is not None:
            cand = (rec.latency.median_ms, Route.parse(rec.requested_route).key(db))
            if best is None or cand < best:
                best = cand
    return best[1] if best else None
