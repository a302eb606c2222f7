"""One route measured for one round of an interleaved re-validation.

Every round-based decision (the study's verdict in ``finish``, the per-shape verdict,
``gptuner revalidate``, the regression gate, a re-tune's hold check) measures a route the same
way: in a fresh process, with the study's sampling settings scaled by :data:`ROUND_SCALE`.
A torch round's process is forked from the fork server (torch and the model already imported)
and compiles the route again from the candidate's warm Inductor cache; each re-measurement
writes its seconds split into start-up, compile and measure (:data:`SPLIT`, :func:`round_times`;
the re-validation event of the study carries them per round).

The unit of evidence in a round is the per-process median, and what narrows a speed-up interval
is the number of rounds: the spread between processes (about 4 % between fresh ONNX Runtime
processes on the 2-vCPU machine, regimes up to 1.7x apart on the H200's launch-bound torch
sample) is far wider than the precision one process reaches. So a round's process keeps the
screening's precision target but a quarter of its sample and time caps (``max_time_s`` 10 s ->
2.5 s): under load, where a process never reaches the target, a round no longer costs the
whole screening budget per route.

A round measures the screened candidate or nothing: each process reports the identity of what it
ran (the sha256 of the code Inductor compiled there, or of the artifact), and a process whose
identity differs from the screened build's is refused (:func:`round_samples`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    from gptuner_core.engine.evaluate.protocol import Evaluator
    from gptuner_core.records import CandidateRecord
    from gptuner_core.records import ChildResult

#: the share of the screening budget (samples and time) one round's process gets
ROUND_SCALE = 0.25
#: written into each re-measurement's folder: its seconds split into start-up, compile, measure
SPLIT = "times.json"
_ROUND = re.compile(r"(?:^|/)r(\d+)_\d+$")
_log = logging.getLogger(__name__)


def split_of(phase_times: dict[str, float], sampling: float | None = None) -> dict[str, float]:
    """A re-measurement's seconds: ``startup`` (request to the child's first phase: the fork or
    the interpreter, imports), ``compile`` (the model, CUDA's set-up and the route compiled again
    from the candidate's warm Inductor cache), ``measure`` (its turn: the first calls, the
    samples, the hand-over), and of it ``sampling`` where given (the samples alone)."""
    split = {"startup": round(float(phase_times.get("start", 0.0)), 3),
             "compile": round(float(phase_times.get("build", 0.0)), 3),
             "measure": round(float(phase_times.get("measure", 0.0)), 3)}
    if sampling is not None:
        split["sampling"] = round(float(sampling), 3)
    return split


def record_split(workdir: Path, res: ChildResult) -> None:
    """Write :data:`SPLIT` beside the re-measurement's log and log the split."""
    split = split_of(res.phase_times or {}, res.measure_time_s)
    end = time.time()  # wall-clock span: a round's processes may overlap (round_prefetch)
    split.update(end=round(end, 3), begin=round(end - sum((res.phase_times or {}).values()), 3))
    try:
        (workdir / SPLIT).write_text(json.dumps(split), encoding="utf-8")
    except OSError:
        return
    _log.info("re-measurement %s: start-up %.2f s, compile %.2f s, measure %.2f s",
              workdir.name, split["startup"], split["compile"], split["measure"])


def round_times(root: Path, folder: str = "revalidation", since: float | None = None) -> list[dict[str, float]]:
    """Seconds per re-validation round under ``root/folder`` (``rR_NNNNN`` re-measurements),
    each round's processes summed: ``round``, ``processes``, ``startup``, ``compile``,
    ``measure`` (and ``sampling``, its samples alone, where the processes gave it), ``total``;
    ``span``: first request to last result of the round (its processes may have started rounds
    ahead); ``wall``: what the round added to the re-validation, from the
    later of its first request and the previous round's last result (round 0: the re-validation's
    start, ``since``, when given) to its last result."""
    rounds: dict[int, dict[str, float]] = {}
    for path in sorted((root / folder).glob(f"*/{SPLIT}")):
        m = _ROUND.search(path.parent.name)
        if not m:
            continue
        try:
            split = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        row = rounds.setdefault(int(m.group(1)), {"round": int(m.group(1)), "processes": 0,
                                                  "startup": 0.0, "compile": 0.0, "measure": 0.0})
        row["processes"] += 1
        for key in ("startup", "compile", "measure"):
            row[key] = round(row[key] + float(split.get(key, 0.0)), 3)
        if "sampling" in split:  # older splits have none
            row["sampling"] = round(row.get("sampling", 0.0) + float(split["sampling"]), 3)
        if "begin" in split:
            row["begin"] = min(row.get("begin", split["begin"]), split["begin"])
            row["end"] = max(row.get("end", split["end"]), split["end"])
    out = [rounds[k] for k in sorted(rounds)]
    last_end = since
    for row in out:
        row["total"] = round(row["startup"] + row["compile"] + row["measure"], 3)
        if "begin" in row:  # processes start ahead (round_prefetch): a round adds the time from
            begin, end = row.pop("begin"), row.pop("end")  # its start or the previous round's end
            row["span"] = round(end - begin, 3)
            row["wall"] = round(end - max(begin, last_end if last_end is not None else begin), 3)
            last_end = end
    return out


def measure_round(evaluator: Evaluator, record: CandidateRecord, purpose: str) -> ChildResult:
    """Measure ``record`` once more in a fresh process, in the work folder ``purpose``."""
    return evaluator.remeasure(record, purpose, ROUND_SCALE)


def round_samples(
    evaluator: Evaluator, record: CandidateRecord, purpose: str, who: str, *, see: object = None
) -> list[float]:
    """The samples of :func:`measure_round`; a failed or empty measurement raises
    ``BackendError("re-measurement of <who> failed (<cause>; see <purpose>/log.txt)")``
    (``see``: the folder to name instead of ``purpose``)."""
    return checked_samples(measure_round(evaluator, record, purpose), record, purpose, who, see=see)


def checked_samples(res: ChildResult, record: CandidateRecord, purpose: str, who: str, *,
                    see: object = None) -> list[float]:
    """The samples of a round's result ``res`` for ``record``, or the ``BackendError`` of
    :func:`round_samples` (failed, empty, or another build than the screened one)."""
    if not res.ok or not res.samples_ms:
        msg = f"re-measurement of {who} failed ({res.error or 'no samples'}; see {see or purpose}/log.txt)"
        raise BackendError(msg)
    screened = record.artifact_sha256
    if res.sha256 and screened and res.sha256 != screened:
        msg = (f"re-measurement of {who} refused: its process ran other code than the screened "
               f"build (identity {res.sha256[:12]}, screened {screened[:12]}; a recompile chose "
               f"other kernels, or the artifact changed; see {see or purpose}/log.txt)")
        raise BackendError(msg)
    return list(res.samples_ms)
