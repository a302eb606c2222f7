"""Frames and figures for the Explain views: layer profiles, the aligned diff, knob effects.

Pure functions over :mod:`gptuner_core.profiles` and :mod:`gptuner_core.explain` records;
pandas and plotly are imported inside, as everywhere in ``views``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.views.legend import legend_below


if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd
    import plotly.graph_objects as go

    from gptuner_core.explain import FailureCluster
    from gptuner_core.explain import Interaction
    from gptuner_core.explain import KnobEffect
    from gptuner_core.explain import KnobImportance
    from gptuner_core.profiles import LayerDiff
    from gptuner_core.profiles import LayerProfile


def profile_frame(profile: LayerProfile) -> pd.DataFrame:
    """One row per runtime layer: name, kind, precision, ms, share, ONNX origins, detail."""
    import pandas as pd

    rows = [{
        "layer": la.name, "kind": la.kind, "precision": la.precision,
        "time_ms": la.time_ms, "share": profile.share(la), "calls": la.calls,
        "onnx_origin": ", ".join(la.origins), "fused": la.fused, "detail": la.detail,
    } for la in profile.layers]
    return pd.DataFrame(rows, columns=["layer", "kind", "precision", "time_ms", "share", "calls",
                                       "onnx_origin", "fused", "detail"])


def layer_diff_table(diff: LayerDiff) -> pd.DataFrame:
    """The aligned diff, one row per group, sources first (``cause`` says whether it counts)."""
    import pandas as pd

    sources = {id(r) for r in diff.sources()}
    rows = [{
        "layer (ONNX origin)": r.group, "op": r.op,
        f"{diff.label_a} kernels": "+".join(r.a_kinds), f"{diff.label_a} precision": r.a_precision,
        f"{diff.label_b} kernels": "+".join(r.b_kinds), f"{diff.label_b} precision": r.b_precision,
        f"{diff.label_a} ms": r.a_ms, f"{diff.label_b} ms": r.b_ms, "delta_ms": r.delta_ms,
        "noise_ms": r.noise_ms, "contribution": r.contribution,
        "cause": "source" if id(r) in sources else ("within noise" if not r.significant else "against"),
        "changes": "; ".join(r.changes), "origins": ", ".join(r.origins),
    } for r in diff.rows]
    return pd.DataFrame(rows)


def layer_diff_figure(diff: LayerDiff, limit: int = 20) -> go.Figure:
    """Horizontal bars of the time delta per group with the noise as error bars."""
    import plotly.graph_objects as go

    rows = list(diff.rows[:limit])[::-1]
    colors = ["#2ca02c" if r.significant and r.delta_ms > 0 else "#d62728" if r.significant else "#bbbbbb"
              for r in rows]
    fig = go.Figure(go.Bar(
        x=[r.delta_ms for r in rows], y=[r.group for r in rows], orientation="h", marker_color=colors,
        error_x={"type": "data", "array": [r.noise_ms for r in rows], "visible": True},
        hovertext=["; ".join(r.changes) for r in rows],
    ))
    fig.update_layout(
        title=f"Time saved per layer by {diff.label_b} vs {diff.label_a} (ms; grey = within noise)",
        xaxis_title=f"{diff.label_a} ms - {diff.label_b} ms", height=max(300, 26 * len(rows) + 120),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return legend_below(fig)


def effects_frame(effects: Sequence[KnobEffect]) -> pd.DataFrame:
    """Main effects: failure rate (Wilson CI) and speed-up (CI) of each value vs the default,
    each estimate with its interval in one column (fifteen columns were wider than the page)."""
    import pandas as pd

    def pct(v: float) -> str:
        return f"{v:.0%}"

    rows = [{
        "knob": e.knob, "value": e.value, "default": e.default, "candidates": e.n,
        "failed": e.n_failed,
        "failure rate (95% CI)": f"{pct(e.failure_rate)} [{pct(e.failure_ci[0])}, {pct(e.failure_ci[1])}]",
        "failure rate at default": pct(e.default_failure_rate),
        "eligible": e.n_eligible,
        "speed-up (95% CI)": "—" if e.speedup is None else (
            f"{e.speedup:.3f}x" + (f" [{e.speedup_ci[0]:.3f}, {e.speedup_ci[1]:.3f}]" if e.speedup_ci else "")),
        "beyond noise": "yes" if e.significant else "no", "contrast": e.method,
    } for e in effects]
    return pd.DataFrame(rows)


def effects_figure(effects: Sequence[KnobEffect]) -> go.Figure:
    """Forest plot: speed-up of each knob value vs its default with its 95 % CI (log x)."""
    import plotly.graph_objects as go

    shown = [e for e in effects if e.speedup is not None and e.speedup_ci is not None]
    fig = go.Figure(go.Scatter(
        x=[e.speedup for e in shown], y=[f"{e.knob}={e.value}" for e in shown], mode="markers",
        error_x={"type": "data", "symmetric": False,
                 "array": [e.speedup_ci[1] - e.speedup for e in shown],  # type: ignore[index,operator]
                 "arrayminus": [e.speedup - e.speedup_ci[0] for e in shown]},  # type: ignore[index,operator]
        marker={"size": 10, "color": ["#2ca02c" if e.significant else "#7f7f7f" for e in shown]},
    ))
    fig.add_vline(x=1.0, line={"dash": "dash", "color": "#444"})
    fig.update_layout(title="Speed-up vs the default value (95 % CI; grey = within noise)",
                      xaxis_type="log", xaxis_title="speed-up (x)", height=max(280, 30 * len(shown) + 120),
                      margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return legend_below(fig)


def importance_frame(items: Sequence[KnobImportance]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{"knob": i.knob, "importance": i.importance, "ci_low": i.ci[0],
                          "ci_high": i.ci[1], "eligible_candidates": i.n} for i in items],
                        columns=["knob", "importance", "ci_low", "ci_high", "eligible_candidates"])


def importance_caveat(items: Sequence[KnobImportance], *, eligible: int) -> str:
    """From how many routes the importance was ranked (a DUPLICATE, the same build as another
    candidate, counts once: the header's eligible count includes them) and, when every
    interval spans more than half of [0, 1], that the ranking is not determined yet."""
    n = max((i.n for i in items), default=0)
    line = f"Ranked from {n} distinct eligible routes."
    if eligible > n:
        line = (f"Ranked from {n} distinct eligible routes ({eligible - n} eligible candidates "
                "repeat another's build and count once).")
    if items and all(i.ci[1] - i.ci[0] > 0.5 for i in items):
        line += (" Every interval spans most of [0, 1]: with so few routes the ranking is not "
                 "determined yet; more candidates would narrow it.")
    return line


def interactions_frame(items: Sequence[Interaction]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{
        "pair": f"{i.knob_a}={i.value_a} + {i.knob_b}={i.value_b}", "candidates": i.n_pair,
        "pair_speedup": i.pair_speedup, "additive_speedup": i.additive_speedup,
        "interaction_ratio": i.ratio, "pair_failure_rate": i.pair_failure_rate,
        "singles_failure_rate": i.singles_failure_rate,
    } for i in items], columns=["pair", "candidates", "pair_speedup", "additive_speedup",
                                "interaction_ratio", "pair_failure_rate", "singles_failure_rate"])


def failures_frame(clusters: Sequence[FailureCluster]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{
        "signature": c.signature, "count": len(c.numbers),
        "candidates": ", ".join(f"#{n}" for n in c.numbers), "explanation": c.explanation,
        "exclude_expression": c.exclude_expression or "",
    } for c in clusters], columns=["signature", "count", "candidates", "explanation", "exclude_expression"])


def importance_figure(items: Sequence[KnobImportance]) -> go.Figure:
    """Knob importance (share of explained log-latency variance) with its bootstrap 95 % CI:
    the numbers of Explain's importance table, drawn."""
    import plotly.graph_objects as go

    shown = sorted(items, key=lambda i: i.importance)
    fig = go.Figure(go.Bar(
        x=[i.importance for i in shown], y=[i.knob for i in shown], orientation="h",
        error_x={"type": "data", "symmetric": False,
                 "array": [max(0.0, i.ci[1] - i.importance) for i in shown],
                 "arrayminus": [max(0.0, i.importance - i.ci[0]) for i in shown]},
        marker={"color": "#1f77b4"},
    ))
    fig.update_layout(title="Knob importance (95 % bootstrap CI)", xaxis_title="importance",
                      xaxis_range=[0, 1], height=max(240, 34 * len(shown) + 120),
                      margin={"l": 10, "r": 10, "t": 50, "b": 40})
    return legend_below(fig)
