"""``gp``: Optuna's Gaussian-process sampler over the variable knobs."""

from __future__ import annotations

from typing import Any

from gptuner_core.strategies._optuna import COMMON_OPTIONS
from gptuner_core.strategies._optuna import OptunaStrategy


class GpStrategy(OptunaStrategy):
    name = "gp"
    summary = (
        "Optuna Gaussian-process Bayesian optimisation (categorical knobs); best for small "
        "budgets on small spaces; accuracy as a constraint."
    )
    options = dict(COMMON_OPTIONS)

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
