"""``random``: uniform sampling without replacement over the ``full`` space, seeded.

Indices are drawn with ``route_at("full", i)`` (random access), so a 2^200 space is never
materialised: small spaces are shuffled once, large ones sampled with rejection of drawn indices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gptuner_core.strategies._base import Proposal
from gptuner_core.strategies._base import Strategy
from gptuner_core.strategies._base import StrategyOption


if TYPE_CHECKING:
    from collections.abc import Iterator
    from collections.abc import Sequence

    from gptuner_core.records import CandidateRecord

_SHUFFLE_LIMIT = 1_000_000


def random_indices(total: int, seed: int) -> Iterator[int]:
    """Every index of ``range(total)`` once, in a seeded random order (lazy for huge totals)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if total <= _SHUFFLE_LIMIT:
        yield from (int(i) for i in rng.permutation(total))
        return
    drawn: set[int] = set()
    while len(drawn) < total:
        i = int(rng.integers(0, total)) if total < 2**63 else _big_randint(rng, total)
        if i not in drawn:
            drawn.add(i)
            yield i


def _big_randint(rng, total: int) -> int:  # type: ignore[no-untyped-def]
    bits = total.bit_length()
    while True:
        words = rng.integers(0, 2**32, size=(bits + 31) // 32, dtype="uint64")
        value = 0
        for w in words:
            value = (value << 32) | int(w)
        value >>= (len(words) * 32 - bits)
        if value < total:
            return value


class RandomStrategy(Strategy):
    name = "random"
    summary = "Uniform random routes of the full space, without replacement (seeded)."
    options = {
        "max_trials": StrategyOption(
            description="stop after this many routes of its own (0: until the space is exhausted)",
            default=0,
            type=int,
            minimum=0,
        ),
    }

    def __init__(self, space, **kw) -> None:  # type: ignore[no-untyped-def]
        super().__init__(space, **kw)
        if self.opts["max_trials"] < 0:
            from gptuner_core.errors import StrategyError

            msg = f"strategy 'random' option 'max_trials' must be >= 0 (got {self.opts['max_trials']})"
            raise StrategyError(msg)
        self._indices = random_indices(space.count("full"), self.seed)

    def ask(
        self, history: Sequence[CandidateRecord], pending: Sequence[Proposal] = ()
    ) -> Proposal | None:
        decided, first = self.opening(history, pending)
        if decided:
            return first
        seen = self.taken(history, pending)
        for index in self._indices:
            route = self.space.route_at("full", index)
            if self.key(route) not in seen:
                self._own += 1
                return Proposal(route=route, info={"search": "random", "index": index})
        return None

    def planned(self) -> int | None:
        return self.capped_plan(self.space.count("full"))
