"""Candidate records -> one tidy DataFrame, and the accuracy gate re-applied at any ε.

The frame is built once per store snapshot; changing ε only re-applies the gate to the stored
losses (:func:`apply_epsilon`, ~10 ms for 10,000 candidates), so the results page re-ranks
instantly without re-running anything.
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
    """One row per candidate, plus one ``knob:<name>`` column per knob seen in any route, one
    ``loss:<output or slice>`` column per stored loss (``loss:output0[:, 4:, :]``) and one
    ``task:<detail>`` column per detail a built-in task metric reported (``task:recall``).

    ``route`` is the effective route when the backend reported one, else the requested route.
    ``speedup`` is the stored value, or baseline-median / median when the store has none.
    """
    import numpy as np
    import pandas as pd

    rows: list[dict[str, Any]] = []
    knob_rows: list[dict[str, str]] = []
    acc_rows: list[dict[str, float]] = []
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
        acc_rows.append({f"loss:{k}": v for k, v in losses.items()}
                        | {f"task:{k}": v for k, v in (acc.task_details if acc else {}).items()})
    df = pd.DataFrame(rows, columns=list(BASE_COLUMNS))
    accuracy = pd.DataFrame(acc_rows, index=df.index)
    if not accuracy.empty:
        df = pd.concat([df, accuracy], axis=1)
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
    records: Sequence[CandidateRecord],
    epsilon: float | None,
    *,
    metric: str = "l2",
    task_metric: str | None = None,
    max_drop: float | None = None,
) -> pd.DataFrame:
    """Copy of ``df`` with ``passes_gate``, ``gate_reason``, ``category`` and ``rank`` at this ε.

    The gate is :func:`gptuner_core.accuracy.rerank` over the stored losses (trtexec semantics:
    a route fails if any output's loss >= ε; non-finite losses fail; with ``max_drop`` the task
    metric may fall at most that much below the default route's). ``records`` must be the records
    ``df`` was built from. Ranking (1 = best) is by median latency among eligible candidates.
    """
    import numpy as np

    from gptuner_core.accuracy import AccuracySettings
    from gptuner_core.accuracy import check
    from gptuner_core.accuracy import rerank
    from gptuner_core.errors import ConfigError
    from gptuner_core.records import CandidateState

    settings = AccuracySettings(
        metric=metric, epsilon=epsilon, task_metric=task_metric if max_drop is not None else None,
        max_task_drop=max_drop,
    )
    reference = next((r.accuracy.task_metric for r in records if r.number == 0 and r.accuracy), None)
    try:
        verdicts = rerank(records, settings, reference)
    except ConfigError as exc:
        verdicts = {r.number: (False, str(exc)) for r in records}
    failed_states = {CandidateState.BUILD_FAILED, CandidateState.CRASHED, CandidateState.TIMED_OUT}
    pending_states = {CandidateState.PENDING, CandidateState.RUNNING}
    by_number: dict[int, tuple[str, bool, str]] = {}
    for r in records:
        ok, reason = verdicts[r.number]
        if r.state in failed_states:
            cat = FAILED
        elif r.state in pending_states:
            cat = PENDING
        elif ok:
            cat = ELIGIBLE
        elif r.latency is None and r.accuracy is not None:
            # never timed: would it pass the gate now?
            try:
                passes, why = check(r.accuracy, settings, reference)
            except ConfigError as exc:
                passes, why = False, str(exc)
            cat, reason = (NOT_MEASURED, reason) if passes else (ACCURACY_FAILED, why)
        elif r.latency is None:
            cat = NOT_MEASURED
        else:
            cat = ACCURACY_FAILED
        by_number[r.number] = (cat, ok, reason)
    out = df.copy()
    rows = [by_number.get(int(n), (PENDING, False, "not in records")) for n in out["number"]]
    out["category"] = np.array([c for c, _, _ in rows], dtype=object)
    out["passes_gate"] = np.array([ok for _, ok, _ in rows], dtype=bool)
    out["gate_reason"] = [why for _, _, why in rows]
    eligible = out["category"].to_numpy() == ELIGIBLE
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
