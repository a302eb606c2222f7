"""Replay recorded studies: "what would strategy X have found with budget B on my sweep?".

A :class:`Recording` holds the knob database, the expression and the candidate records of a study
recorded earlier with real measurements, either a study folder (read through
``open_store(study_dir, readonly=True)``) or a recording JSON written by
``benchmarks/record_sweep.py`` or ``gptuner import --format t4|kerneltuner`` (``{"format":
"gptuner-recording/1", "knob_db", "config", "candidates"}``, gzipped or not). :class:`gptuner_core.engine.evaluate.recorded.RecordedEvaluator` answers proposals from
it (its docstring states the one semantics), both for ``gptuner replay`` /
:func:`gptuner_core.engine.loop.simulate.simulate` and for a tuner run on a recording.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import ConfigError
from gptuner_core.errors import StoreError
from gptuner_core.records import CandidateRecord
from gptuner_core.routes import Route


if TYPE_CHECKING:

    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase

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
    #: derived data computed once per recording (the index by route key, the baseline, the
    #: optimum): a replay asks for them per proposal, so they are never rebuilt per call
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def by_key(self) -> dict[str, CandidateRecord]:
        """One record per route key: the eligible one with the most samples wins (built once)."""
        index = self._memo.get("by_key")
        if index is None:
            index = {}
            for rec in self.records:
                key = Route.parse(rec.requested_route).key(self.db)
                old = index.get(key)
                if old is None or (rec.eligible, len(rec.samples_ms)) > (old.eligible, len(old.samples_ms)):
                    index[key] = rec
            self._memo["by_key"] = index
        return index

    def lookup(self, route: str | Route) -> CandidateRecord | None:
        """The record of ``route`` (text or :class:`Route`), ``None`` when not recorded."""
        parsed = Route.parse(route) if isinstance(route, str) else route
        return self.by_key.get(parsed.key(self.db))

    @property
    def exhaustive(self) -> bool:
        """Every feasible route of the space is recorded: a route absent from it is infeasible
        (``config["space"] == "exhaustive"``, written by ``gptuner import --format t4|kerneltuner``)."""
        return self.config.get("space") == "exhaustive"

    @property
    def baseline(self) -> CandidateRecord:
        base = self._memo.get("baseline")
        if base is not None:
            return base
        key = self.expression.baseline().key(self.db)
        rec = self.by_key.get(key)
        if rec is None or rec.latency is None:
            msg = f"recording {self.source}: the default route has no latency (cannot define 1.0x)"
            raise ConfigError(msg)
        self._memo["baseline"] = rec
        return rec

    def speedup(self, rec: CandidateRecord) -> float | None:
        """Recorded speed-up against the recorded baseline (``None`` unless eligible)."""
        if not rec.eligible or rec.latency is None:
            return None
        if rec.speedup is not None:
            return rec.speedup
        return self.baseline.latency.median_ms / rec.latency.median_ms  # type: ignore[union-attr]

    def optimum(self) -> tuple[float, CandidateRecord]:
        best = self._memo.get("optimum")
        if best is None:
            best = max(
                ((s, r) for r in self.records if (s := self.speedup(r)) is not None),
                key=lambda sr: sr[0],
            )
            self._memo["optimum"] = best
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
        from gptuner_core.jsonio import loads

        try:
            raw = path.read_bytes()
            if raw[:2] == b"\x1f\x8b":  # a gzipped recording (gptuner import --out X.json.gz)
                import gzip

                raw = gzip.decompress(raw)
            text = raw.decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            msg = f"recording '{path}': cannot read a recording JSON ({exc})"
            raise ConfigError(msg) from None
        doc = loads(text, f"recording '{path}'", ConfigError)
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
