"""Lazy, name-keyed strategy registry.

Strategies are imported on first use, so ``import gptuner_core.strategies`` never pulls in optuna.
A strategy whose module cannot be imported (optuna missing) is reported as
``strategy 'tpe' is unavailable: cannot import ... (No module named 'optuna')``.

:func:`describe_strategies` is the single declaration the CLI help and the dashboard's strategy
form are generated from.

The default strategy is ``auto`` (see ``DEFAULT_STRATEGY``, :mod:`.auto` and docs/benchmarks.md):
``fast_tpe`` on spaces of at most 1,000 routes (the recorded ONNX Runtime sweeps, where it reaches
100 % of the optimum with 20 % of the builds: benchmarks/search_efficiency.py), ``hybrid`` (bo +
model-ordered local search with restarts) on larger ones (the Kernel Tuner spaces, where
fast_tpe's one-off sweep reaches 68 % of the optimum on one of them: benchmarks/search_scale.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.errors import StrategyError
from gptuner_core.registry import load_registered
from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy
from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._base import validate_options


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.expressions import Expression
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.routes import Route
    from gptuner_core.strategies.warm_start import Prior

#: name -> "module:Class"
_STRATEGIES: dict[str, str] = {
    "fast": "gptuner_core.strategies.fast:FastStrategy",
    "full": "gptuner_core.strategies.full:FullStrategy",
    "mixed": "gptuner_core.strategies.mixed:MixedStrategy",
    "mixed_noise": "gptuner_core.strategies.mixed_noise:MixedNoiseStrategy",
    "random": "gptuner_core.strategies.random:RandomStrategy",
    "tpe": "gptuner_core.strategies.tpe:TpeStrategy",
    "fast_tpe": "gptuner_core.strategies.tpe:FastTpeStrategy",
    "gp": "gptuner_core.strategies.gp:GpStrategy",
    "nsga2": "gptuner_core.strategies.nsga2:Nsga2Strategy",
    "race": "gptuner_core.strategies.race:RaceStrategy",
    "bo": "gptuner_core.strategies.bo:BoStrategy",
    "local": "gptuner_core.strategies.local:LocalStrategy",
    "hybrid": "gptuner_core.strategies.hybrid:HybridStrategy",
    "auto": "gptuner_core.strategies.auto:AutoStrategy",
}

#: The strategy ``gptuner tune`` uses when none is given (justified by the benchmark).
DEFAULT_STRATEGY = "auto"


def strategy_names() -> list[str]:
    """Every registered name, in registry order."""
    return list(_STRATEGIES)


def strategy_class(name: str) -> type[Strategy]:
    """Import and return the class registered as ``name``."""
    return load_registered(
        _STRATEGIES, name, kind="strategy", unknown=StrategyError, unavailable=StrategyError
    )


def get_strategy(
    name: str,
    space: Expression,
    *,
    seed: int = 0,
    db: KnobDatabase | None = None,
    warm_start: Sequence[Route] = (),
    prior: Prior | None = None,
    budgeted: bool = False,
    **options: Any,
) -> Strategy:
    """Instantiate strategy ``name`` over ``space`` with validated ``options``.

    ``budgeted``: the run has an explicit budget (candidates or time), which replaces a
    strategy's own automatic stopping rule (``budget_fraction``) unless that option is given.
    """
    cls = strategy_class(name)
    if budgeted and "budget_fraction" in cls.options:
        options.setdefault("budget_fraction", 0.0)
    try:
        return cls(space, seed=seed, db=db, warm_start=warm_start, prior=prior, **options)
    except ImportError as exc:
        raise StrategyError(_unavailable(name, exc)) from None


#: strategies built on a library of the ``search`` extra
OPTUNA_STRATEGIES = ("tpe", "fast_tpe", "gp", "nsga2")


def _unavailable(name: str, exc: ImportError) -> str:
    """One line: which library the strategy needs, how to install it, which searches need none."""
    if (exc.name or "").split(".")[0] == "optuna" or "optuna" in str(exc):
        others = ", ".join(f"--search {n}" for n in _STRATEGIES if n not in OPTUNA_STRATEGIES)
        default = " (the default)" if name == DEFAULT_STRATEGY else ""
        return (f"--search {name}{default} needs optuna, which is not installed ({exc}): "
                f"pip install 'gptuner[search]', or pick a search that needs no library: {others}")
    return f"strategy '{name}' is unavailable: {exc}"


def describe_strategies() -> list[dict[str, Any]]:
    """``[{name, summary, default, available, reason, options: {name: {...}}}]`` for every strategy.

    Never raises: an unimportable strategy is listed with ``available=False`` and the cause.
    """
    out = []
    for name in _STRATEGIES:
        try:
            cls = strategy_class(name)
        except StrategyError as exc:
            out.append({"name": name, "summary": "", "default": name == DEFAULT_STRATEGY,
                        "available": False, "reason": str(exc), "options": {}})
            continue
        available, reason = True, ""
        if name in OPTUNA_STRATEGIES:
            try:
                importlib.import_module("optuna")
            except ImportError as exc:
                available, reason = False, _unavailable(name, exc)
        out.append({
            "name": name,
            "summary": cls.summary,
            "default": name == DEFAULT_STRATEGY,
            "available": available,
            "reason": reason,
            "options": {k: v.to_json() for k, v in cls.options.items()},
        })
    return out


__all__ = [
    "DEFAULT_STRATEGY",
    "Proposal",
    "Strategy",
    "StrategyOption",
    "describe_strategies",
    "get_strategy",
    "strategy_class",
    "strategy_names",
    "validate_options",
]
