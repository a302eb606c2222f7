"""The New run form's fields, generated from the declarations the CLI uses.

Defaults come from :class:`gptuner_core.config.StudyConfig` (the CLI's defaults), strategy options
from ``describe_strategies()``, backend options from ``option_declarations`` and measurement
options from ``SamplingSettings``. Numbers are typed as text and parsed by
:func:`gptuner_core.dashboard.inputs.parse_number`, so a bad entry gives one line under its field
and the form collects no value for it. What the form collects is a plain dict keyed by
``StudyConfig`` field names (:func:`check_fields` validates it).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

import streamlit as st

from gptuner_core.dashboard.inputs import REQUIRED
from gptuner_core.dashboard.inputs import parse_number


if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from gptuner_core.knobs import KnobDatabase


@dataclass(frozen=True, slots=True, kw_only=True)
class NumberField:
    """A numeric ``StudyConfig`` field on the form (``scale``: form unit -> config unit)."""

    name: str
    label: str
    kind: type = float
    minimum: float | None = None
    exclusive: bool = False
    optional: bool = False
    scale: float = 1.0
    help: str = ""


BASIC = (
    NumberField(name="max_candidates", label="Max candidates (blank = no limit)", kind=int,
                minimum=1, optional=True),
    NumberField(name="time_budget_s", label="Time budget, minutes (blank = none)", minimum=0,
                exclusive=True, optional=True, scale=60.0),
    NumberField(name="target_speedup", label="Stop at speed-up (blank = never)", minimum=0,
                exclusive=True, optional=True),
)
ADVANCED = (
    NumberField(name="batch_size", label="Batch size", kind=int, minimum=1,
                help="rows per inference, for accuracy and latency"),
    NumberField(name="atol", label="atol", minimum=0, help="absolute tolerance of the metric"),
    NumberField(name="rtol", label="rtol", minimum=0, help="relative tolerance of the metric"),
    NumberField(name="build_timeout_s", label="Build timeout (s)", minimum=0, exclusive=True),
    NumberField(name="measure_timeout_s", label="Measure timeout (s)", minimum=0, exclusive=True),
    NumberField(name="revalidate_top_k", label="Re-validate top k", kind=int, minimum=0,
                help="finalists re-measured in fresh processes before a winner is declared"),
    NumberField(name="revalidate_rounds", label="Re-validation rounds", kind=int, minimum=0),
    NumberField(name="min_effect", label="Min effect (relative speed-up)", minimum=0,
                help="a winner must beat the default by at least this fraction"),
    NumberField(name="drift_every", label="Drift sentinel every N candidates (0 = never)",
                kind=int, minimum=0),
    NumberField(name="seed", label="Seed", kind=int, minimum=0),
)


def config_default(name: str) -> Any:
    """The ``StudyConfig`` (= CLI) default of a field."""
    from gptuner_core.config import StudyConfig

    f = {f.name: f for f in dataclasses.fields(StudyConfig)}[name]
    if f.default is not dataclasses.MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else None


def _fmt(value: Any, scale: float = 1.0) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value / scale:g}"
    return str(value)


def number_input(spec: NumberField, *, key: str, container: Any = None, disabled: bool = False,
                 default: Any = None) -> tuple[Any, str | None]:
    """A typed text field; shows its own error line; returns ``(value in config units, error)``.

    The field starts at the CLI's default of ``spec.name`` unless ``default`` is given.
    """
    box = container or st
    default = config_default(spec.name) if default is None else default
    text = box.text_input(spec.label, value=_fmt(default, spec.scale), key=key, help=spec.help or None,
                          disabled=disabled)
    value, problem = parse_number(text, spec.label.split(" (")[0], kind=spec.kind,
                                  minimum=spec.minimum, exclusive_min=spec.exclusive,
                                  blank=_no_blank(spec))
    if problem:
        box.error(problem)
        return None, problem
    if value is not None and spec.scale != 1.0:
        value = value * spec.scale
    return value, None


def _no_blank(spec: NumberField) -> Any:
    return None if spec.optional else REQUIRED


def number_fields(specs: Sequence[NumberField], *, key: str, columns: int = 3,
                  disabled: bool = False, ui: Any = st) -> tuple[dict[str, Any], list[str]]:
    """Render ``specs`` in columns; return ``({field: value}, problems)``."""
    values: dict[str, Any] = {}
    problems: list[str] = []
    cols = ui.columns(columns)
    for i, spec in enumerate(specs):
        value, problem = number_input(spec, key=f"{key}_{spec.name}", container=cols[i % columns],
                                      disabled=disabled)
        if problem:
            problems.append(problem)
        else:
            values[spec.name] = value
    return values, problems


def _typed_input(label: str, default: Any, *, key: str, help: str | None = None,
                 choices: Sequence[Any] | None = None, kind: str | None = None,
                 ui: Any = st) -> tuple[Any, str | None]:
    """One option widget chosen by its declared type (drawn on ``ui``: the page, or a closed
    section's stand-in, :class:`gptuner_core.dashboard.sections.Closed`); ``(value, error)``."""
    kind = kind or type(default).__name__
    if choices:
        options = list(choices)
        return ui.selectbox(label, options, index=options.index(default) if default in options else 0,
                            key=key, help=help), None
    if kind == "bool":
        return ui.checkbox(label, value=bool(default), key=key, help=help), None
    if kind in ("int", "float"):
        text = ui.text_input(label, value=_fmt(default), key=key, help=help)
        value, problem = parse_number(text, label.split(" (")[0], kind=int if kind == "int" else float)
        if problem:
            ui.error(problem)
        return value, problem
    if kind in ("list", "dict"):
        text = ui.text_input(label + " (JSON)", value=json.dumps(default), key=key, help=help)
        try:
            return json.loads(text or "null"), None
        except ValueError as exc:
            problem = f"{label}: expected JSON (got '{text}': {exc})"
            ui.error(problem)
            return None, problem
    return ui.text_input(label, value=_fmt(default), key=key, help=help), None


def strategy_options_form(entry: dict[str, Any], *, key: str,
                          ui: Any = st) -> tuple[dict[str, Any], list[str]]:
    """The options of one strategy (``describe_strategies()`` entry) with descriptions and
    defaults; returns the options that differ from their defaults, and problems."""
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name, opt in (entry.get("options") or {}).items():
        default = opt.get("default")
        label = f"{name} (default: {_fmt(default) if default not in (None, '') else 'none'})"
        value, problem = _typed_input(label, default, key=f"{key}_{entry['name']}_{name}",
                                      help=opt.get("description"), choices=opt.get("choices"),
                                      kind=opt.get("type"), ui=ui)
        ui.caption(opt.get("description") or "")
        if problem:
            problems.append(f"{entry['name']}.{problem}")
        elif value != default:
            out[name] = value
    return out, problems


def backend_options_form(backend: str, *, key: str, ui: Any = st) -> tuple[dict[str, Any], list[str]]:
    """The declared options of a registered backend; returns the changed ones, and problems."""
    from gptuner_core.backends import backend_class
    from gptuner_core.errors import GptunerError

    try:
        declared = backend_class(backend).option_declarations
    except (GptunerError, ImportError):
        return {}, []
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name, (desc, default) in declared.items():
        label = f"{name} (default: {_fmt(default) if default not in (None, '') else 'none'})"
        value, problem = _typed_input(label, default, key=f"{key}_{backend}_{name}", help=desc, ui=ui)
        if problem:
            problems.append(problem)
        elif value != default:
            out[name] = value
    return out, problems


def measurement_form(*, key: str, ui: Any = st) -> tuple[dict[str, Any], list[str]]:
    """``SamplingSettings`` fields (the ``--measure-option`` keys); returns the changed ones."""
    from gptuner_core.measurement import SamplingSettings

    out: dict[str, Any] = {}
    problems: list[str] = []
    cols = ui.columns(3)
    for i, f in enumerate(dataclasses.fields(SamplingSettings)):
        default = f.default
        with cols[i % 3]:
            kind = "int" if default is None else None  # gpu_index: int or blank
            value, problem = _typed_input(f"{f.name} (default: {_fmt(default) or 'none'})", default,
                                          key=f"{key}_{f.name}", kind=kind, ui=ui)
        if problem and not (default is None and problem.endswith("(got an empty field)")):
            problems.append(problem)
        elif value != default:
            out[f.name] = value
    return out, problems


def check_fields(fields: dict[str, Any]) -> list[str]:
    """Problems of a collected form, one line each, using the CLI's own validation.

    Uses ``gptuner_core.config.validate_config`` when the engine has it; until then
    ``StudyConfig(**fields)`` plus the strategy's and the measurement's option validation.
    """
    from gptuner_core import config as config_module
    from gptuner_core.errors import GptunerError

    validate = getattr(config_module, "validate_config", None)
    problems: list[str] = []
    try:
        cfg = config_module.StudyConfig(**fields)
        if validate is not None:
            validate(cfg)
    except (GptunerError, TypeError, ValueError) as exc:
        problems.append(str(exc))
    try:
        from gptuner_core.strategies import strategy_class
        from gptuner_core.strategies import validate_options

        search = fields.get("search", "")
        validate_options(search, strategy_class(search).options, fields.get("strategy_options") or {})
    except (GptunerError, ImportError) as exc:
        problems.append(str(exc))
    try:
        from gptuner_core.measurement import SamplingSettings

        SamplingSettings(**(fields.get("measurement") or {}))
    except (GptunerError, TypeError, ValueError) as exc:
        problems.append(f"measurement options: {exc}")
    return problems


@st.cache_data(max_entries=64, show_spinner=False)
def _counts(expr_text: str, db_sha: str, budget: int | None, _db: KnobDatabase) -> pd.DataFrame:
    import pandas as pd

    from gptuner_core.expressions import Expression
    from gptuner_core.views.builder import strategy_counts

    expr = Expression.parse(expr_text, _db)
    rows = [{"strategy": c.strategy + (" (default)" if c.default else ""), "routes": c.text,
             "note": c.note} for c in strategy_counts(expr, max_candidates=budget)]
    return pd.DataFrame(rows, columns=["strategy", "routes", "note"])


def strategy_counts_cached(expr_text: str, db: KnobDatabase, budget: int | None) -> pd.DataFrame:
    """Routes per strategy for this expression (every strategy, the default one marked)."""
    return _counts(expr_text, db.sha256, budget, db)
