"""The gate's result as JSON, JUnit XML (one test case, CI systems show it) and Markdown (a PR comment)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape
from xml.sax.saxutils import quoteattr


if TYPE_CHECKING:
    from gptuner_core.bundle.gate import GateResult

_ICON = {"regression": "❌", "accuracy_failed": "❌", "failed": "❌", "inconclusive": "⚠️",
         "no_change": "✅", "improvement": "🚀"}


def to_junit(res: GateResult) -> str:
    name = quoteattr(f"gate {Path(res.candidate).name} vs {Path(res.bundle).name}")
    failed = res.exit_code == 1
    skipped = res.exit_code == 3
    body = ""
    if failed:
        body = f'<failure message={quoteattr(res.message)} type="{res.decision.value}">{escape(res.message)}</failure>'
    elif skipped:
        body = f"<skipped message={quoteattr(res.message)}/>"
    out = escape(json.dumps(res.to_json(), indent=1))
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites><testsuite name="gptuner-gate" tests="1" failures="{int(failed)}" '
        f'skipped="{int(skipped)}" errors="0">'
        f'<testcase classname="gptuner.gate" name={name}>{body}<system-out>{out}</system-out>'
        "</testcase></testsuite></testsuites>\n"
    )


def _fmt(x: float | None, spec: str = ".4f") -> str:
    return "–" if x is None else format(x, spec)


def to_markdown(res: GateResult) -> str:
    icon = _ICON.get(res.decision.value, "")
    lines = [
        f"### {icon} gptuner gate: **{res.decision.value.replace('_', ' ')}** (exit {res.exit_code})",
        "",
        res.message,
        "",
        "| | baseline | candidate |",
        "|---|---|---|",
        f"| median latency (per-process medians, ms) | {_fmt(res.baseline_ms)} | {_fmt(res.candidate_ms)} |",
        f"| route | `{res.route or '(default)'}` | `{res.route or '(default)'}` |",
        "",
        f"- latency ratio candidate / baseline: **{_fmt(res.ratio, '.3f')}x**"
        + (f", {res.confidence:.0%} CI [{res.ci[0]:.3f}, {res.ci[1]:.3f}]" if res.ci else ""),
        f"- practical threshold: {res.threshold:.0%}; rounds: {res.rounds} (interleaved, fresh processes)",
    ]
    if res.accuracy:
        losses = ", ".join(f"{k}={v:.3g}" for k, v in (res.accuracy.get("losses") or {}).items())
        lines.append(f"- accuracy ({res.accuracy.get('metric')}): {losses or 'n/a'}")
    lines += [f"- note: {n}" for n in res.notes]
    if res.mismatches:
        lines.append("- fingerprint differences (compared anyway, --allow-mismatch): "
                     + "; ".join(f"`{k}`: {a} → {b}" for k, a, b in res.mismatches))
    lines += ["", f"<sub>bundle: `{res.bundle}`; candidate: `{res.candidate}`</sub>", ""]
    return "\n".join(lines)


def write_outputs(res: GateResult, *, json_path: str | None, junit: str | None, markdown: str | None) -> None:
    from gptuner_core.engine.files.workspace import write_atomic

    for path, text in ((json_path, lambda: json.dumps(res.to_json(), indent=2)),
                       (junit, lambda: to_junit(res)), (markdown, lambda: to_markdown(res))):
        if path:
            Path(path).absolute().parent.mkdir(parents=True, exist_ok=True)
            write_atomic(Path(path).absolute(), text().encode())
