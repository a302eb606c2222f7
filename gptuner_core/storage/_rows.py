"""Candidate rows of the SQLite store: record <-> row tuple, JSON columns, sample blobs.

Queried fields are plain columns; nested ones (accuracy, latency, speedup_ci, strategy_info,
telemetry, extra) are compact JSON text (Python's ``json``: NaN/inf kept as ``NaN``/``Infinity``).
Listing decodes each JSON column of all rows with a single ``json.loads`` call, which keeps
``candidates()`` fast at 10,000 rows. Raw samples are little-endian float64 bytes (exact).
"""

from __future__ import annotations

import json
import os
from typing import Any

from gptuner_core.errors import StoreError
from gptuner_core.records import AccuracyResult
from gptuner_core.records import CandidateRecord
from gptuner_core.records import CandidateState
from gptuner_core.records import LatencyStats


COLUMNS = (
    "number",
    "state",
    "requested_route",
    "effective_route",
    "error",
    "phase",
    "started_at",
    "finished_at",
    "build_time_s",
    "measure_time_s",
    "artifact_path",
    "artifact_sha256",
    "artifact_size",
    "duplicate_of",
    "speedup",
    "median_ms",
    "log_path",
    # JSON columns from here on (index _FIRST_JSON)
    "accuracy",
    "latency",
    "speedup_ci",
    "strategy_info",
    "telemetry",
    "extra",
)
_FIRST_JSON = COLUMNS.index("accuracy")
INSERT_CANDIDATE = (
    f"INSERT OR REPLACE INTO candidates ({', '.join(COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(COLUMNS))})"
)
SELECT_CANDIDATES = f"SELECT {', '.join('c.' + c for c in COLUMNS)}"
_STATES = {s.value: s for s in CandidateState}
_LATENCY_FIELDS = frozenset(LatencyStats.__dataclass_fields__)


def _json_default(value: Any) -> Any:
    # numpy scalars/arrays, sets and paths; anything else is a caller bug surfaced clearly.
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    msg = f"value of type {type(value).__name__} is not JSON-serializable"
    raise TypeError(msg)


def dumps(value: Any, what: str) -> str:
    """Compact JSON text, or StoreError naming ``what``."""
    try:
        return json.dumps(value, separators=(",", ":"), default=_json_default)
    except (TypeError, ValueError) as exc:
        msg = f"cannot store {what}: {exc} (expected JSON-able values: str, int, float, list, dict)"
        raise StoreError(msg) from exc


def _real(value: float | None) -> float | None:
    return None if value is None else float(value)


def samples_blob(samples: tuple[float, ...]) -> bytes:
    import numpy as np

    return np.asarray(samples, dtype="<f8").tobytes()


def samples_from_blob(blob: bytes | None) -> tuple[float, ...]:
    if not blob:
        return ()
    import numpy as np

    return tuple(np.frombuffer(blob, dtype="<f8").tolist())


def record_to_row(record: CandidateRecord) -> tuple[Any, ...]:
    """The ``INSERT_CANDIDATE`` parameters for ``record``; StoreError on unstorable values."""
    n = record.number
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        msg = f"candidate number must be an int >= 0 (got {n!r})"
        raise StoreError(msg)
    state = CandidateState(record.state).value
    accuracy = None
    if record.accuracy is not None:
        acc = record.accuracy
        accuracy = dumps(
            {
                "metric": acc.metric,
                "losses": {str(k): float(v) for k, v in acc.losses.items()},
                "task_metric": _real(acc.task_metric),
                "task_metric_name": acc.task_metric_name,
                "task_details": {str(k): float(v) for k, v in acc.task_details.items()},
            },
            f"candidate {n} accuracy",
        )
    latency = record.latency
    speedup_ci = None
    if record.speedup_ci is not None:
        lo, hi = record.speedup_ci
        speedup_ci = dumps([float(lo), float(hi)], f"candidate {n} speedup_ci")
    return (
        n,
        state,
        record.requested_route,
        record.effective_route,
        record.error,
        record.phase,
        _real(record.started_at),
        _real(record.finished_at),
        _real(record.build_time_s),
        _real(record.measure_time_s),
        record.artifact_path,
        record.artifact_sha256,
        None if record.artifact_size is None else int(record.artifact_size),
        None if record.duplicate_of is None else int(record.duplicate_of),
        _real(record.speedup),
        None if latency is None else _real(latency.median_ms),
        record.log_path,
        accuracy,
        None if latency is None else dumps(latency.to_json(), f"candidate {n} latency"),
        speedup_ci,
        dumps(record.strategy_info, f"candidate {n} strategy_info"),
        dumps(record.telemetry, f"candidate {n} telemetry"),
        dumps(record.extra, f"candidate {n} extra"),
    )


def _decode_column(rows: list[tuple[Any, ...]], index: int) -> list[Any]:
    texts = ["null" if r[index] is None else r[index] for r in rows]
    try:
        return json.loads("[" + ",".join(texts) + "]")
    except ValueError:
        for row, text in zip(rows, texts, strict=True):
            try:
                json.loads(text)
            except ValueError as exc:
                msg = (
                    f"candidate {row[0]}: column '{COLUMNS[index]}' holds malformed JSON "
                    f"({exc}); the store is damaged"
                )
                raise StoreError(msg) from exc
        raise


def _latency(data: dict[str, Any] | None) -> LatencyStats | None:
    if data is None:
        return None
    try:
        return LatencyStats(**data)
    except TypeError:  # a field dropped since the row was written
        return LatencyStats(**{k: v for k, v in data.items() if k in _LATENCY_FIELDS})


def rows_to_records(
    rows: list[tuple[Any, ...]], blobs: list[bytes | None] | None = None
) -> list[CandidateRecord]:
    """Decode ``SELECT_CANDIDATES`` rows (and their sample blobs, when given) into records."""
    if not rows:
        return []
    accs, lats, cis, infos, tels, extras = (
        _decode_column(rows, i) for i in range(_FIRST_JSON, len(COLUMNS))
    )
    records = []
    for i, row in enumerate(rows):
        acc = accs[i]
        ci = cis[i]
        records.append(
            CandidateRecord(
                number=row[0],
                state=_STATES[row[1]],
                requested_route=row[2],
                effective_route=row[3],
                error=row[4],
                phase=row[5],
                started_at=row[6],
                finished_at=row[7],
                build_time_s=row[8],
                measure_time_s=row[9],
                artifact_path=row[10],
                artifact_sha256=row[11],
                artifact_size=row[12],
                duplicate_of=row[13],
                speedup=row[14],
                log_path=row[16],
                accuracy=None
                if acc is None
                else AccuracyResult(
                    metric=acc["metric"],
                    losses=acc["losses"],
                    task_metric=acc.get("task_metric"),
                    task_metric_name=acc.get("task_metric_name"),
                    task_details=acc.get("task_details") or {},
                ),
                latency=_latency(lats[i]),
                speedup_ci=None if ci is None else (ci[0], ci[1]),
                strategy_info=infos[i],
                telemetry=tels[i],
                extra=extras[i],
                samples_ms=samples_from_blob(blobs[i]) if blobs is not None else (),
            )
        )
    return records
