"""Knob databases as tables, expression building, and database diffs (knob explorer)."""

from __future__ import annotations

from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import pandas as pd

    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.knobs import KnobDiff


def knob_frame(db: KnobDatabase) -> pd.DataFrame:
    """One row per knob: name, namespace, default, allowed values, help."""
    import pandas as pd

    rows = [
        {
            "knob": k.name,
            "namespace": k.namespace,
            "default": k.default,
            "allowed": "|".join(k.values) if k.values is not None else f"any {k.unbounded_type}",
            "n_values": len(k.values) if k.values is not None else None,
            "help": k.help,
        }
        for k in db
    ]
    return pd.DataFrame(rows, columns=["knob", "namespace", "default", "allowed", "n_values", "help"])


def search_knobs(
    df: pd.DataFrame, query: str = "", namespaces: Sequence[str] | None = None
) -> pd.DataFrame:
    """Rows whose name or help contains every word of ``query`` (case-insensitive), in ``namespaces``."""
    mask = df.index == df.index
    if namespaces:
        mask &= df["namespace"].isin(list(namespaces)).to_numpy()
    hay = (df["knob"] + " " + df["namespace"] + " " + df["help"]).str.lower()
    for word in query.lower().split():
        mask &= hay.str.contains(word, regex=False).to_numpy()
    return df[mask]


def expression_text(selection: Mapping[str, Sequence[str]]) -> str:
    """trtexec tunable expression: ``-k=v`` for one value, ``-k=[a|b]`` for several.

    Knobs with no value selected are left out (they stay at their default).
    """
    parts = []
    for name, values in selection.items():
        vals = [str(v) for v in values if str(v) != ""]
        if not vals:
            continue
        parts.append(f"{name}={vals[0]}" if len(vals) == 1 else f"{name}=[{'|'.join(vals)}]")
    return " ".join(parts)


def route_counts(expr: Expression, budget: int | None = None) -> dict[str, int]:
    """Routes per search: ``fast`` (one knob at a time), ``full`` (cartesian product), and the
    budget-capped count of the sampling strategies (random/TPE/GP evaluate at most ``budget``)."""
    counts = {"fast": expr.count("fast"), "full": expr.count("full")}
    if budget is not None:
        counts["sampled (budget)"] = min(budget, counts["full"])
    return counts


def diff_frame(diff: KnobDiff) -> pd.DataFrame:
    """One row per change between two databases: change, knob, old, new."""
    import pandas as pd

    def allowed(k: object) -> str:
        values = getattr(k, "values", None)
        return "|".join(values) if values is not None else getattr(k, "allowed_text", "")

    rows = [("added", k.name, "", f"default {k.default}; [{allowed(k)}]") for k in diff.added]
    rows += [("removed", k.name, f"default {k.default}; [{allowed(k)}]", "") for k in diff.removed]
    rows += [("default changed", c.name, c.old.default, c.new.default) for c in diff.default_changed]
    rows += [
        ("values changed", c.name, allowed(c.old), allowed(c.new)) for c in diff.values_changed
    ]
    return pd.DataFrame(rows, columns=["change", "knob", f"old ({diff.old_version})", f"new ({diff.new_version})"])
