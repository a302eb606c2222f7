"""Candidate records -> one tidy DataFrame, and the accuracy gate re-applied at any ε.

The frame is built once per store snapshot; changing ε only recomputes two vectorized columns
(:func:`apply_epsilon`), so the results page re-ranks instantly from the stored losses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from gptuner_core.records import CandidateRecord


#: Display categories, in legend order.
ELIGIBLE = "eligible"
ACCURACY_FAILED = "accuracy-failed"
FAILED = "crashed / failed"
NOT_MEASURED = "passes ε, not timed"
PENDING = "in progress"
CATEGORIES = (ELIGIBLE, ACCURACY_FAILED, NOT_MEASURED, FAILED, PENDING)

BASE_COLUMNS = (
    "number",
    "state",
    "route",
    "median_ms",
    "ci_low_ms",
    "ci_high_ms",
    "p95_ms",
    "cv",
    "n_samples",
    "speedup",
    "speedup_ci_low",
    "speedup_ci_high",
    "max_loss",
    "task_metric",
    "build_time_s",
    "measure_time_s",
    "error",
)


def route_pairs(text: str | None) -> dict[str, str]:
    """``"-a=1 -b=x"`` -> ``{"-a": "1", "-b": "x"}``; tolerant (malformed tokens are skipped)."""
    out: dict[str, str] = {}
    for token in (text or "").split():
        name, eq, value = token.partition("=")
        if eq:
            out[name] = value
    return out


def candidates_frame(records: Sequence[CandidateRecord]) -> pd.DataFrame:
    """One row per candidate, plus one ``knob:<name>`` column per knob seen in any route.

    ``route`` is the effective route when the backend reported one, else the requested route.
    ``speedup`` is the stored value, or baseline-median / median when the store has none.
    """
    import numpy as np
    import pandas as pd

    rows: list[dict[str, Any]] = []
    knob_rows: list[dict[str, str]] = []
    for r in records:
        lat = r.latency
        acc = r.accuracy
        losses = acc.losses if acc is not None else {}
        ci = r.speedup_ci or (None, None)
        rows.append(
            {
                "number": r.number,
                "state": r.state.value,
                "route": r.effective_route or r.requested_route,
                "median_ms": lat.median_ms if lat else np.nan,
                "ci_low_ms": lat.ci_low_ms if lat else np.nan,
                "ci_high_ms": lat.ci_high_ms if lat else np.nan,
                "p95_ms": lat.p95_ms if lat else np.nan,
                "cv": lat.cv if lat else np.nan,
                "n_samples": lat.n_samples if lat else 0,
                "speedup": r.speedup if r.speedup is not None else np.nan,
                "speedup_ci_low": ci[0] if ci[0] is not None else np.nan,
                "speedup_ci_high": ci[1] if ci[1] is not None else np.nan,
                "max_loss": max(losses.values()) if losses else np.nan,
                "task_metric": acc.task_metric if acc and acc.task_metric is not None else np.nan,
                "build_time_s": r.build_time_s if r.build_time_s is not None else np.nan,
                "measure_time_s": r.measure_time_s if r.measure_time_s is not None else np.nan,
                "error": r.error or "",
            }
        )
        knob_rows.append(route_pairs(r.requested_route) | route_pairs(r.effective_route))
    df = pd.DataFrame(rows, columns=list(BASE_COLUMNS))
    knobs = pd.DataFrame(knob_rows, index=df.index)
    if not knobs.empty:
        knobs.columns = [f"knob:{c}" for c in knobs.columns]
        df = pd.concat([df, knobs], axis=1)
    base = df.loc[df["number"] == 0, "median_ms"]
    if len(base) and np.isfinite(base.iloc[0]):
        missing = df["speedup"].isna() & df["median_ms"].notna()
        df.loc[missing, "speedup"] = base.iloc[0] / df.loc[missing, "median_ms"]
    return df


def knob_columns(df: pd.DataFrame) -> list[str]:
    """Knob names (without the ``knob:`` prefix) that take more than one value in ``df``."""
    return [
        c.removeprefix("knob:")
        for c in df.columns
        if c.startswith("knob:") and df[c].nunique(dropna=False) > 1
    ]


def apply_epsilon(
    df: pd.DataFrame,
    epsilon: float | None,
    *,
    max_drop: float | None = None,
) -> pd.DataFrame:
    """Copy of ``df`` with ``passes_gate``, ``category`` and ``rank`` for this ε.

    A candidate passes when every stored per-output loss is below ``epsilon`` (trtexec: a route
    fails if any loss >= ε) and, with ``max_drop``, its task metric is at most ``max_drop`` below
    the default route's (number 0). Candidates without stored accuracy pass. Ranking (1 = best)
    is by median latency among eligible candidates.
    """
    import numpy as np

    from gptuner_core.records import CandidateState

    out = df.copy()
    passes = np.ones(len(out), dtype=bool)
    if epsilon is not None:
        passes &= ~(out["max_loss"].to_numpy() >= epsilon)
    if max_drop is not None:
        base = out.loc[out["number"] == 0, "task_metric"]
        if len(base) and np.isfinite(base.iloc[0]):
            drop = base.iloc[0] - out["task_metric"].to_numpy()
            passes &= ~(drop > max_drop)
    state = out["state"].to_numpy()
    failed = np.isin(
        state,
        [CandidateState.BUILD_FAILED.value, CandidateState.CRASHED.value,
         CandidateState.TIMED_OUT.value],
    )
    pending = np.isin(state, [CandidateState.PENDING.value, CandidateState.RUNNING.value])
    timed = out["median_ms"].notna().to_numpy()
    category = np.where(
        failed,
        FAILED,
        np.where(
            pending,
            PENDING,
            np.where(~passes, ACCURACY_FAILED, np.where(timed, ELIGIBLE, NOT_MEASURED)),
        ),
    )
    out["passes_gate"] = passes & ~failed & ~pending
    out["category"] = category
    eligible = category == ELIGIBLE
    out["rank"] = np.nan
    out.loc[eligible, "rank"] = out.loc[eligible, "median_ms"].rank(method="first")
    return out


def winner(df: pd.DataFrame) -> dict[str, Any] | None:
    """The best eligible row of a frame returned by :func:`apply_epsilon`, as a dict."""
    ranked = df[df["rank"] == 1]
    if ranked.empty:
        return None
    return ranked.iloc[0].to_dict()


def pareto_mask(latency: Sequence[float], loss: Sequence[float]) -> list[bool]:
    """True for points not dominated in (latency, loss), both minimized; NaN never on the front.

    A missing loss counts as 0 (no accuracy recorded). Ties keep the first point only.
    """
    import numpy as np

    lat = np.asarray(latency, dtype=float)
    los = np.nan_to_num(np.asarray(loss, dtype=float), nan=0.0)
    mask = np.zeros(len(lat), dtype=bool)
    order = [i for i in np.lexsort((los, lat)) if np.isfinite(lat[i])]
    best = np.inf
    for i in order:
        if los[i] < best:
            mask[i] = True
            best = los[i]
    return mask.tolist()


def best_so_far(df: pd.DataFrame) -> pd.DataFrame:
    """``number``, ``median_ms`` of eligible candidates and the running minimum in study order."""
    sub = df[df["category"] == ELIGIBLE].sort_values("number")[["number", "median_ms", "route"]]
    sub = sub.assign(best_ms=sub["median_ms"].cummin())
    return sub.reset_index(drop=True)


def filter_frame(
    df: pd.DataFrame,
    *,
    categories: Sequence[str] | None = None,
    text: str = "",
    knob_values: dict[str, Sequence[str]] | None = None,
) -> pd.DataFrame:
    """Rows whose category is in ``categories``, whose route or error contains ``text``
    (case-insensitive) and whose knob columns take one of the given values."""
    mask = df.index == df.index
    if categories is not None and "category" in df:
        mask &= df["category"].isin(list(categories)).to_numpy()
    if text:
        t = text.lower()
        mask &= (
            df["route"].str.lower().str.contains(t, regex=False)
            | df["error"].str.lower().str.contains(t, regex=False)
        ).to_numpy()
    for knob, values in (knob_values or {}).items():
        col = f"knob:{knob}"
        if values and col in df:
            mask &= df[col].isin(list(values)).to_numpy()
    return df[mask]


def to_csv(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False).encode("utf-8")
