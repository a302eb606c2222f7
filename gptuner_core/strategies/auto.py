"""``auto``: pick the search by the size of the space (the default).

Two strategies win in different places (docs/benchmarks.md, issue 28):

* on small spaces (the recorded ONNX Runtime sweeps, 48-192 routes) ``fast_tpe`` (the default
  route's one-off sweep, a climb, then TPE) reaches 100 % of the optimum with 20 % of the builds,
  where ``hybrid`` reaches 92-100 %;
* on large spaces (the Kernel Tuner spaces, 4,092-22,272 routes, half of them infeasible)
  ``hybrid`` (a Gaussian process that learns where routes fail, a model-ordered local search,
  restarts) reaches 93-95 % on convolution with 200 builds where ``fast_tpe`` reaches 68-100 %
  (its seeds do not matter there: its one-off sweep decides).

So ``auto`` runs ``fast_tpe`` when the full product of the space has at most ``switch_at``
routes, else ``hybrid``; without optuna (the ``search`` extra) it runs ``hybrid`` on every
size. Each proposal's ``info`` names the strategy that made it (``"auto": "hybrid"``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy
from gptuner_core.strategies._base import StrategyOption


if TYPE_CHECKING:
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord

SMALL = "fast_tpe"
LARGE = "hybrid"


def choose(space_size: int, switch_at: int, *, optuna_available: bool = True) -> str:
    """The strategy ``auto`` runs on a space of ``space_size`` routes (the full product)."""
    return SMALL if space_size <= switch_at and optuna_available else LARGE


class AutoStrategy(Strategy):
    name = "auto"
    summary = (
        f"picks by space size: {SMALL} on small spaces (at most switch_at routes), {LARGE} on "
        f"larger ones ({LARGE} also when optuna is not installed)."
    )
    options = {
        "switch_at": StrategyOption(
            description=f"largest space (full product of the knobs' values) searched with {SMALL}",
            default=1000, type=int,
        ),
        "max_trials": StrategyOption(
            description="stop after this many routes of its own (0: see budget_fraction)",
            default=0, type=int,
        ),
        "budget_fraction": StrategyOption(
            description=(
                "when max_trials is 0: the chosen strategy's own stopping rule (a share of the "
                "full space, at least the fast one-offs; 0: run until the space is exhausted)"
            ),
            default=0.2, type=float,
        ),
    }

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        import importlib.util

        from gptuner_core.strategies import strategy_class

        super().__init__(space, **kw)
        optuna = importlib.util.find_spec("optuna") is not None
        self.chosen = choose(space.count("full"), self.opts["switch_at"], optuna_available=optuna)
        inner = {k: self.opts[k] for k in ("max_trials", "budget_fraction")}
        self.inner = strategy_class(self.chosen)(
            space, seed=kw.get("seed", 0), db=kw.get("db"), warm_start=kw.get("warm_start", ()),
            prior=kw.get("prior"), **inner,
        )

    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        proposal = self.inner.ask(history, pending)
        if proposal is None:
            return None
        return replace(proposal, info={**proposal.info, "auto": self.chosen})

    def tell(self, record: CandidateRecord) -> None:
        self.inner.tell(record)

    def planned(self) -> int | None:
        return self.inner.planned()
