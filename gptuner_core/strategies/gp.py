"""``gp``: Optuna's Gaussian-process sampler over the variable knobs."""

from __future__ import annotations

from typing import Any

from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._optuna import COMMON_OPTIONS
from gptuner_core.strategies._optuna import OptunaStrategy


class GpStrategy(OptunaStrategy):
    name = "gp"
    summary = (
        "Optuna Gaussian-process Bayesian optimisation (categorical knobs); best for small "
        "budgets on small spaces; accuracy as a constraint."
    )
    options = {
        **COMMON_OPTIONS,
        # each re-ask refits the GP (costly), and its argmax rarely moves after a known value
        "max_retries": StrategyOption(
            description="re-asks when Optuna proposes an evaluated route, before a random one",
            default=2,
            type=int,
            minimum=0,
        ),
    }

    def make_sampler(self) -> Any:
        import warnings

        optuna = self.optuna
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.GPSampler(
                seed=self.seed,
                n_startup_trials=self.opts["n_startup_trials"],
                **self.constraint_kwargs(),
            )
