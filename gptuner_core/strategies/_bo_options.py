"""The ``bo`` strategy's options and its acquisition turns (declared apart from the model)."""

from __future__ import annotations

from gptuner_core.strategies._base import StrategyOption
from gptuner_core.strategies._transfer import SPREAD_SHARE


#: acquisition turns: 0 greedy EI, 1 EI asking ~5 % more, 2 exploring, 3 polish the best
TURNS = {"ei": (0,), "portfolio": (0, 1, 2, 3), "polish": (0, 3, 1, 3, 2, 3)}
#: the exploring turn (a lower confidence bound, or ``explore=random``)
EXPLORE = 2


OPTIONS = {
    "max_trials": StrategyOption(
        description="stop after this many routes of its own (0: see budget_fraction)",
        default=0, type=int,
    ),
    "budget_fraction": StrategyOption(
        description=(
            "when max_trials is 0: stop after max(fast one-offs, min(this share of the full "
            "space, 4x the fast one-offs)) routes (0: run until the space is exhausted)"
        ),
        default=0.2, type=float,
    ),
    "n_initial": StrategyOption(
        description="random routes before the model is used (with a prior: none)",
        default=10, type=int,
    ),
    "pool": StrategyOption(
        description="random candidates scored per proposal (besides the best's neighbours)",
        default=300, type=int,
    ),
    "acquisition": StrategyOption(
        description=(
            "ei: expected improvement; portfolio: in turn greedy EI, EI asking ~5 %% more, "
            "a lower confidence bound (explores more) and the best one-off neighbour of the "
            "best route so far (polishes it); polish: half the turns polish"
        ),
        default="portfolio", choices=tuple(TURNS),
    ),
    "explore": StrategyOption(
        description="the portfolio's exploring turn: a lower confidence bound, or a random "
        "route among those likely to build",
        default="lcb", choices=("lcb", "random"),
    ),
    "near_default": StrategyOption(
        description="the default route's one-off neighbours are candidates too",
        default=False, type=bool,
    ),
    "feasibility": StrategyOption(
        description="learn where routes fail and weight candidates by P(builds)",
        default=True, type=bool,
    ),
    "feasibility_model": StrategyOption(
        description=(
            "learned: the lower of pairs and a logistic regression on the knobs' sizes and "
            "their products (a limit such as x*y <= 1024 reaches pairs never tried); pairs: a "
            "route builds as often as its worst pair of knob values did; kernel: as often as "
            "the routes near it did"
        ),
        default="learned", choices=("learned", "pairs", "kernel"),
    ),
    "pow2": StrategyOption(
        description=(
            "a size knob (positive integers) that mixes powers of two with other values (16, 32, "
            "48 ... 256) gets a second model feature: is the value a power of two"
        ),
        default=True, type=bool,
    ),
    "min_feasible": StrategyOption(
        description=(
            "only candidates whose P(builds) is at least this share of the likeliest "
            "candidate's compete (0: P(builds) is only a weight)"
        ),
        default=0.8, type=float,
    ),
    "transfer_spread": StrategyOption(
        description=(
            "with a --warm-start prior, on the exploring turn: how far the new GPU may depart "
            "from the source where the study has not looked, as a share of the spread of the "
            "source's log latencies (0: only as far as the study's own results depart from it)"
        ),
        default=SPREAD_SHARE, type=float,
    ),
    "feasible_at": StrategyOption(
        description=(
            "candidates predicted to build with at least this probability are the only ones "
            "that compete, when there are any (a local search whose neighbours all fall below "
            "it has finished its basin); 0: only min_feasible's relative rule"
        ),
        default=0.5, type=float,
    ),
}
