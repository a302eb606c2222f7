"""The report as one self-contained HTML file (plotly.js inlined once; no network)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING


if TYPE_CHECKING:
    from gptuner_core.report.content import StudyReport

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px;color:#222}
h1{font-size:1.5rem} h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
.verdict{padding:.8rem;border-radius:6px;background:#eef6ee} .verdict.inconclusive,.verdict.not_revalidated{background:#fff6e0}
.verdict.failed{background:#fdecea} table{border-collapse:collapse;font-size:.85rem}
td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:left} pre{background:#f6f6f6;padding:.6rem;overflow-x:auto}
.tiles{display:flex;gap:1rem} .tile{border:1px solid #ddd;border-radius:6px;padding:.6rem 1rem}
.tile b{display:block;font-size:1.3rem}
"""


def render_html(rep: StudyReport) -> str:
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>gptuner report: {esc(Path(rep.study).name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>gptuner study report: {esc(rep.study)}</h1>",
        f"<p>status: <b>{esc(rep.status)}</b>; backend: {esc(str(rep.config.get('backend', '?')))}; "
        f"model: <code>{esc(str(rep.config.get('model', '?')))}</code></p>",
        "<h2>Verdict</h2>",
        f"<div class='verdict {esc((rep.verdict or {}).get('verdict', 'none'))}' id='verdict'>{esc(rep.headline)}</div>",
    ]
    if rep.verdict:
        from gptuner_core.records import Winner

        parts.append("<details><summary>How the verdict was measured</summary><p>"
                     f"{esc(Winner.from_json(rep.verdict).details())}</p></details>")
    if rep.lineage:
        parts.append(f"<p id='lineage'>re-tuned from <code>{esc(str(rep.lineage.get('from')))}</code>; "
                     f"old winner still holds: <b>{esc(str(rep.lineage.get('old_winner_holds')))}</b></p>")
    parts.append("<h2>Measurement health</h2><div class='tiles'>")
    for tile in rep.health.get("tiles", []):
        parts.append(f"<div class='tile'>{esc(tile.get('label', ''))}<b>{esc(str(tile.get('value', '')))}</b></div>")
    parts.append("</div>")
    for w in rep.health.get("warnings", []):
        parts.append(f"<p>⚠️ {esc(w)}</p>")
    for i, (key, title, fig) in enumerate(rep.figures):
        parts.append(f"<h2>{esc(title)}</h2><div class='gptuner-figure' data-key='{esc(key)}'>")
        parts.append(fig.to_html(full_html=False, include_plotlyjs=(i == 0), div_id=f"fig-{key}",
                                 config={"displaylogo": False}))
        parts.append("</div>")
    parts.append("<h2>Candidates (screening: one process per route, not the verdict)</h2>")
    parts.append(rep.table.to_html(index=False, na_rep="–", float_format=lambda x: f"{x:.4g}",
                                   table_id="candidates", escape=True))
    parts.append("<h2>Reproduce</h2>")
    for key, cmd in rep.commands.items():
        parts.append(f"<p>{esc(key)}:</p><pre class='repro'>{esc(cmd)}</pre>")
    parts.append("<h2>Settings</h2><pre>" + esc(json.dumps(rep.config, indent=1, default=str)) + "</pre>")
    parts.append("</body></html>\n")
    return "".join(parts)


def write_report(study_dir: str | Path, out: str | Path) -> Path:
    """Write ``study_dir``'s report to ``out`` (atomically)."""
    from gptuner_core.engine.files.workspace import write_atomic
    from gptuner_core.report.content import study_report

    out = Path(out).absolute()
    parent = next(p for p in out.parents if p.exists())
    if out.is_dir() or not parent.is_dir():
        from gptuner_core.errors import ConfigError

        found = "a folder" if out.is_dir() else f"'{parent}' is a file"
        msg = f"--output '{out}' cannot be the report (expected an .html file path in a folder; found {found})"
        raise ConfigError(msg)
    text = render_html(study_report(study_dir))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, text.encode("utf-8"))
    return out
