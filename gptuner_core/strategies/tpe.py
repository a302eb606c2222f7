"""``tpe``: Optuna's Tree-structured Parzen Estimator over the variable knobs."""

from __future__ import annotations

from typing import Any

from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._optuna import COMMON_OPTIONS
from gptuner_core.strategies._optuna import OptunaStrategy


class TpeStrategy(OptunaStrategy):
    name = "tpe"
    summary = (
        "Optuna TPE (model-based): proposes routes likely to be fast from what was measured; "
        "accuracy as a constraint; failures told as a latency penalty."
    )
    options = {
        **COMMON_OPTIONS,
        "multivariate": StrategyOption(
            description="model knob interactions jointly (multivariate TPE)", default=True, type=bool
        ),
    }

    def make_sampler(self) -> Any:
        import warnings

        optuna = self.optuna
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.TPESampler(
                seed=self.seed,
                n_startup_trials=self.opts["n_startup_trials"],
                multivariate=self.opts["multivariate"],
                # trials in flight (parallel builds, workers) count as the worst value seen, so
                # k proposals asked at once spread out; without any in flight: no effect
                constant_liar=True,
                **self.constraint_kwargs(),
            )


class FastTpeStrategy(TpeStrategy):
    name = "fast_tpe"
    summary = (
        "trtexec's fast one-offs first (every knob value tried once against the baseline), then "
        "one-offs around the best route so far (hill climbing), then multivariate TPE seeded "
        "with all of them; stops after about 20% of the space unless given a budget."
    )
    options = {
        **TpeStrategy.options,
        "startup": StrategyOption(
            description="first routes: Optuna's random startup, or trtexec's fast one-offs",
            default="fast",
            choices=("random", "fast"),
        ),
        "n_startup_trials": StrategyOption(
            description="random (or fast) trials before the model is used", default=0, type=int,
            minimum=0,
        ),
        "climb": StrategyOption(
            description=(
                "after the one-offs, try the one-off neighbours of the best eligible route so "
                "far (hill climbing) before and between model proposals"
            ),
            default=True,
            type=bool,
        ),
        "budget_fraction": StrategyOption(
            description=(
                "when max_trials is 0: stop after max(fast one-offs, min(this share of the full "
                "space, 4x the fast one-offs)) routes, so the default search ends even on a "
                "200-knob space (0: run until the space is exhausted)"
            ),
            default=0.2,
            type=float,
            minimum=0.0,
            maximum=1.0,
        ),
    }

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(space, **kw)
        fraction = self.opts["budget_fraction"]
        if not 0 <= fraction <= 1:
            from gptuner_core.errors import StrategyError

            msg = f"strategy '{self.name}' option 'budget_fraction' must be in [0, 1] (got {fraction})"
            raise StrategyError(msg)
        if self.opts["max_trials"] == 0 and fraction > 0:
            import math

            full = space.count("full")
            one_offs = space.count("fast") - 1
            self.opts["max_trials"] = min(
                full, max(one_offs, min(math.ceil(fraction * full), 4 * one_offs))
            )
