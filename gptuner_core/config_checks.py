"""Study settings checked before anything is written, beyond single numbers (``config.validate``
calls :func:`check_settings`): output names, the strategy and its options, warm-start paths,
the Ray address and zero-row shapes. Each refusal is one line: what, expected, found.

Checks that need the model or the dataset (outputs that exist, readable warm-start studies of the
same knobs: :func:`checked_warm_start`, calibration data) run in ``engine.loop.tuner.Tuner``'s plan,
still before the first write. These checks sit below the config and the strategies: they read the
settings through :class:`StudySettings` and never import ``config``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from gptuner_core.errors import ConfigError
from gptuner_core.errors import StrategyError


if TYPE_CHECKING:
    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.routes import Route


class StudySettings(Protocol):
    """The settings of a study these checks read: :class:`gptuner_core.config.StudyConfig` is one.
    ``config.validate`` calls these checks, so naming the class here would make the two modules
    one import circle."""

    search: str
    strategy_options: dict[str, Any]
    warm_start: tuple[str, ...]
    shapes: str | None
    batch_axes: str | None
    measure_shapes: tuple[str, ...]
    gate_outputs: tuple[str, ...]
    output_epsilons: dict[str, float]
    task_output: str | None
    ray: str | None

    def to_json(self) -> dict[str, Any]: ...


def check_settings(cfg: StudySettings) -> None:
    """The checks of this module, in the order a user reads the flags."""
    check_output_names(cfg)
    check_strategy(cfg.search, cfg.strategy_options)
    check_warm_start(cfg.warm_start, read=False)
    check_ray_address(cfg.ray)
    check_batch_rows(cfg)


def check_defines(source: Path, name: str, what: str) -> None:
    """``source`` (a Python file) defines ``name`` at its top level, read with ``ast`` (nothing
    of it runs): a typo in ``metrics.py:accurcy`` is refused before the study, not in every
    candidate. A file that defines names dynamically (``__getattr__``, ``import *``) passes."""
    import ast

    try:
        tree = ast.parse(source.read_bytes(), filename=str(source))
    except (OSError, SyntaxError, ValueError) as exc:
        msg = f"{what}: '{source}' cannot be read as Python ({type(exc).__name__}: {exc})"
        raise ConfigError(msg) from None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif not isinstance(node, ast.Expr):
            return  # if/try/with/for at the top level: names it may define are not followed
    if name in names or "*" in names or "__getattr__" in names:
        return
    shown = sorted(n for n in names if not n.startswith("_"))[:10]
    msg = f"{what}: '{source}' defines no '{name}' (expected a function {name}(outputs, labels); found {shown})"
    raise ConfigError(msg)


def check_output_names(cfg: StudySettings) -> None:
    """``--epsilon NAME=EPS``, ``--gate-outputs`` and ``--task-output`` name outputs: non-empty
    strings (whether the model has them is checked against the model before the study starts)."""
    named = [("--epsilon OUTPUT=EPS", n) for n in (cfg.output_epsilons or {})]
    named += [("--gate-outputs", n) for n in (cfg.gate_outputs or ())]
    if cfg.task_output is not None:
        named.append(("--task-output", cfg.task_output))
    for flag, name in named:
        if not isinstance(name, str) or not name.strip():
            msg = f"{flag} must name a model output (expected a non-empty output name; got {name!r})"
            raise ConfigError(msg)
    for name, eps in (cfg.output_epsilons or {}).items():
        if isinstance(eps, bool) or not isinstance(eps, int | float) or not math.isfinite(eps) or eps <= 0:
            msg = f"--epsilon {name}={eps} must be a finite number > 0 (got {eps!r} for output '{name}')"
            raise ConfigError(msg)


def check_strategy(name: Any, options: Any) -> None:
    """A known strategy and options it declares, of the declared types, choices and ranges.

    A strategy that cannot be imported here (optuna missing) is left to the run, which says
    how to install it; its options are then checked when it is built.
    """
    from gptuner_core.strategies import strategy_class
    from gptuner_core.strategies import strategy_names
    from gptuner_core.strategies import validate_options

    names = strategy_names()
    if name not in names:
        msg = f"--search must be one of {names} (got {name!r})"
        raise ConfigError(msg)
    if not isinstance(options, dict):
        msg = f"--strategy-option: expected KEY=VALUE settings (a mapping; got {type(options).__name__})"
        raise ConfigError(msg)
    try:
        cls = strategy_class(name)
    except StrategyError:
        return
    validate_options(name, cls.options, options)


def check_warm_start(sources: Any, *, read: bool = True) -> None:
    """``--warm-start`` sources are paths; with ``read``, each is a study folder or a recording
    file. Only a new study's plan reads them: a stored configuration (a bundle's on a CI machine)
    still loads when the sources it was warm-started from are gone."""
    if isinstance(sources, str) or not all(isinstance(s, str) and s for s in sources):
        msg = f"--warm-start takes study folders (got {sources!r})"
        raise ConfigError(msg)
    for source in sources if read else ():
        path = Path(source)
        if path.is_dir():
            if not (path / "study.sqlite").is_file():
                msg = (f"--warm-start '{source}' is not a study (expected a study folder holding "
                       f"study.sqlite, or a recording JSON; found a folder without {path / 'study.sqlite'})")
                raise ConfigError(msg)
        elif not path.is_file():
            msg = (f"--warm-start '{source}' does not exist (expected a study folder or a "
                   "recording JSON of an earlier study)")
            raise ConfigError(msg)


def checked_warm_start(config: StudySettings, space: Expression, db: KnobDatabase) -> list[Route]:
    """:func:`warm_start_routes` of a study's ``--warm-start`` sources, each read first: an
    unreadable source, or one tuned on other knobs (neither this knob database's
    ``tuner_version`` nor this model family), is refused (ConfigError naming the flag). Here, not
    in ``strategies.warm_start``: a strategy never imports the study's config, which imports
    these checks, which import the strategies (that was one import circle)."""
    if not config.warm_start:
        return []
    from gptuner_core.strategies.warm_start import check_sources
    from gptuner_core.strategies.warm_start import model_family
    from gptuner_core.strategies.warm_start import warm_start_routes

    check_warm_start(config.warm_start)
    family = model_family(config.to_json())
    check_sources(config.warm_start, db, family)
    return warm_start_routes(config.warm_start, space, db=db, model_family_name=family)


def check_ray_address(address: Any) -> None:
    """``auto``, ``local``, ``HOST:PORT`` or ``ray://HOST[:PORT]`` (what ``ray.init`` parses)."""
    if address is None or address in ("auto", "local"):
        return
    text = str(address)
    expected = "expected 'auto', 'local', HOST:PORT or ray://HOST[:PORT] with a port 1..65535"
    m = re.fullmatch(r"(ray://)?(?P<host>[^:/\s]+|\[[0-9A-Fa-f:]+\])(?::(?P<port>[^:/\s]*))?", text)
    if not isinstance(address, str) or m is None:
        msg = f"--ray {text!r} is not a Ray address ({expected})"
        raise ConfigError(msg)
    port = m.group("port")
    if port is None and not m.group(1):
        msg = f"--ray {text!r} has no port ({expected})"
        raise ConfigError(msg)
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        msg = f"--ray {text!r}: the port {port!r} is not a number 1..65535 ({expected})"
        raise ConfigError(msg)


def check_batch_rows(cfg: StudySettings) -> None:
    """A ``--shapes``/``--measure-shapes`` profile with 0 along an input's batch axis feeds no rows:
    nothing would be measured."""
    from gptuner_core.shapes import parse_batch_axes
    from gptuner_core.shapes import parse_shapes

    axes = parse_batch_axes(cfg.batch_axes) if cfg.batch_axes else {}
    profiles = [("--shapes", cfg.shapes)] if cfg.shapes else []
    profiles += [("--measure-shapes", t) for t in cfg.measure_shapes]
    for flag, text in profiles:
        for name, dims in parse_shapes(text, option=flag).items():
            axis = axes.get(name, 0)
            if axis is not None and axis < len(dims) and dims[axis] == 0:
                msg = (f"{flag}: input '{name}' has 0 rows along its batch axis {axis} (expected a "
                       f"size >= 1 there; got {'x'.join(map(str, dims))})")
                raise ConfigError(msg)


__all__ = ["check_settings"]
