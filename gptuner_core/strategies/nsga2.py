"""``nsga2``: Optuna NSGA-II on two objectives, latency × accuracy loss (the Pareto front)."""

from __future__ import annotations

from typing import Any

from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._optuna import COMMON_OPTIONS
from gptuner_core.strategies._optuna import OptunaStrategy


class Nsga2Strategy(OptunaStrategy):
    name = "nsga2"
    summary = (
        "Optuna NSGA-II: evolves the Pareto front of latency (median ms) and accuracy loss "
        "(max over outputs); accuracy threshold as a constraint."
    )
    options = {
        **{k: v for k, v in COMMON_OPTIONS.items() if k != "n_startup_trials"},
        "population_size": StrategyOption(
            description="routes per generation", default=10, type=int, minimum=2
        ),
    }
    multi_objective = True

    def make_sampler(self) -> Any:
        import warnings

        optuna = self.optuna
        size = self.opts["population_size"]
        if size < 2:
            from gptuner_core.errors import StrategyError

            msg = f"strategy 'nsga2' option 'population_size' must be >= 2 (got {size})"
            raise StrategyError(msg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.NSGAIISampler(
                seed=self.seed, population_size=size, **self.constraint_kwargs()
            )
