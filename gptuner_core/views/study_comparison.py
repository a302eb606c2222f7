"""Several studies side by side (no streamlit): one :class:`StudyLine` a study, as a frame (a row
per study) or a table turned on its side (a column per study), the verdict in each study's words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import pandas as pd

from gptuner_core.views._frames import ELIGIBLE


@dataclass(frozen=True, slots=True, kw_only=True)
class StudyLine:
    """One study in a comparison."""

    name: str
    backend: str
    version: str
    device: str
    candidates: int
    eligible: int
    default_ms: float | None
    best_ms: float | None
    winner: str

    @property
    def screening_speedup(self) -> float | None:
        """The default's screening median over the best eligible one (not the verdict)."""
        return self.default_ms / self.best_ms if self.default_ms and self.best_ms else None


def study_line(name: str, config: Mapping[str, Any], fingerprint: Mapping[str, Any],
               meta: Mapping[str, Any], ranked: pd.DataFrame) -> StudyLine:
    default = ranked.loc[ranked["number"] == 0, "median_ms"]
    eligible = ranked[ranked["category"] == ELIGIBLE]
    win = meta.get("winner") or {}
    return StudyLine(
        name=name, backend=str(config.get("backend", "?")),
        version=str(fingerprint.get("backend_version", "?")), device=str(fingerprint.get("device", "?")),
        candidates=len(ranked), eligible=len(eligible),
        default_ms=float(default.iloc[0]) if len(default) and default.iloc[0] == default.iloc[0] else None,
        best_ms=float(eligible["median_ms"].min()) if len(eligible) else None,
        winner=verdict_line(win),
    )


def verdict_line(win: Mapping[str, Any]) -> str:
    """A study's verdict in one line: its headline (the verdict's speed-up and interval, as on
    every page) and the interval's stated confidence; "—" before a verdict. Never the tuner's
    raw message: its "99.71% CI" (the sequential test's per-look level) beside the verdict's
    95 % was two confidences for one interval (issue 39 item 2)."""
    if not win:
        return "—"
    from gptuner_core.records import Winner

    w = Winner.from_json(dict(win))
    return f"{w.headline()} ({w.confidence * 100:.3g}% confidence)" if w.ci else w.headline()


def comparison_frame(lines: Sequence[StudyLine]) -> pd.DataFrame:
    """One row per study: backend, version, device, counts, default and best latency, speed-up."""
    import pandas as pd

    rows = []
    for s in lines:
        rows.append({"study": s.name, "backend": s.backend, "version": s.version, "device": s.device,
                     "candidates": s.candidates, "eligible": s.eligible,
                     "default ms": s.default_ms, "best ms": s.best_ms,
                     "screening best speed-up": s.screening_speedup, "winner": s.winner})
    return pd.DataFrame(rows, columns=["study", "backend", "version", "device", "candidates",
                                       "eligible", "default ms", "best ms", "screening best speed-up", "winner"])


#: the rows of :func:`comparison_table`, verdict first, then what each study ran on
TABLE_FIELDS = ("verdict", "backend", "version", "device", "candidates", "eligible", "default ms",
                "best ms", "screening best speed-up")


def comparison_table(lines: Sequence[StudyLine]) -> pd.DataFrame:
    """:func:`comparison_frame` turned on its side: one row per field, one column per study, every
    value as text. A row per study cut the winner sentence and pushed columns off-screen; a
    column per study wraps in a static table (issue 39 item 7)."""
    import pandas as pd

    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v:.4g}"

    columns: dict[str, list[str]] = {"field": list(TABLE_FIELDS)}
    for s in lines:
        speed = s.screening_speedup
        columns[s.name] = [s.winner, s.backend, s.version, s.device, f"{s.candidates:,}",
                           f"{s.eligible:,}", ms(s.default_ms), ms(s.best_ms),
                           "—" if speed is None else f"{speed:.3f}x"]
    return pd.DataFrame(columns)
