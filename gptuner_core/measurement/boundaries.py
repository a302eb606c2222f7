"""Where a sequential re-validation may stop, and how much error it may spend at each look.

Looking at the data after every round and stopping as soon as an interval clears the threshold
inflates the false-winner rate far beyond the nominal level (each look is another chance). We
control it by **alpha spending with a union bound** (a Bonferroni split of the error over looks
and contenders):

* the family-wise error ``alpha = 1 - confidence`` is spent along the information fraction
  ``t = rounds / max_rounds`` by a Lan-DeMets spending function: ``"pocock"``
  ``alpha * ln(1 + (e - 1) t)`` (spends early: clear effects stop after few rounds) or
  ``"obrien-fleming"`` ``2 - 2 Phi(z_{1 - alpha/2} / sqrt(t))`` (spends late: almost all of it at
  the last look);
* look ``i`` gets the increment ``alpha(t_i) - alpha(t_{i-1})``, split evenly over the ``K``
  contenders (Bonferroni), and each contender's interval at that look is computed at two-sided
  level ``1 - increment / K``.

By the union bound the chance that *any* interval of *any* contender at *any* look misses its true
value is at most the sum of the increments, ``alpha``; a false winner needs the lower end to miss,
so the false-winner rate is at most ``alpha / 2``. Unlike exact group-sequential boundaries this
needs no joint normality of the looks, so it stays valid with the rank interval and with
bimodal regimes; the price is some conservatism, kept small by looking on a geometric schedule
(:func:`look_rounds`) rather than after every round. Stopping a contender early as "not faster"
(futility) or because another route already beat it never adds error.
"""

from __future__ import annotations

import math

from gptuner_core.errors import ConfigError


SPENDING = ("pocock", "obrien-fleming")


def spent(t: float, alpha: float, kind: str = "pocock") -> float:
    """Cumulative error spent at information fraction ``t`` (0..1); ``spent(1) == alpha``."""
    if kind not in SPENDING:
        msg = f"spending must be one of {list(SPENDING)} (got {kind!r})"
        raise ConfigError(msg)
    t = min(max(float(t), 0.0), 1.0)
    if t == 0.0:
        return 0.0
    if kind == "pocock":
        return alpha * math.log(1.0 + (math.e - 1.0) * t)
    from scipy.stats import norm

    return float(min(alpha, 2.0 - 2.0 * norm.cdf(norm.ppf(1.0 - alpha / 2.0) / math.sqrt(t))))


def look_rounds(min_rounds: int, max_rounds: int, growth: float = 1.5) -> tuple[int, ...]:
    """Rounds after which the data are looked at: ``min_rounds``, then x``growth``, then the last.

    >>> look_rounds(3, 20)
    (3, 4, 6, 9, 13, 20)
    """
    if not (isinstance(min_rounds, int) and isinstance(max_rounds, int) and 2 <= min_rounds <= max_rounds):
        msg = (
            f"rounds must satisfy 2 <= min_rounds <= max_rounds (got min_rounds={min_rounds!r}, "
            f"max_rounds={max_rounds!r})"
        )
        raise ConfigError(msg)
    if not growth > 1.0:
        msg = f"look growth must be > 1 (got {growth!r})"
        raise ConfigError(msg)
    looks = [min_rounds]
    while looks[-1] < max_rounds:
        nxt = max(looks[-1] + 1, int(looks[-1] * growth))
        looks.append(min(nxt, max_rounds))
    if len(looks) >= 3 and looks[-1] - looks[-2] < (looks[-2] - looks[-3]) / 2:
        del looks[-2]  # a last step much shorter than the one before wastes a look
    return tuple(looks)


def look_alphas(
    looks: tuple[int, ...], max_rounds: int, alpha: float, kind: str, contenders: int
) -> tuple[float, ...]:
    """Two-sided error of each contender's interval at each look (increment / contenders)."""
    if contenders < 1:
        msg = f"need at least one contender (got {contenders})"
        raise ConfigError(msg)
    out, before = [], 0.0
    for n in looks:
        now = spent(n / max_rounds, alpha, kind)
        out.append(max(now - before, 0.0) / contenders)
        before = now
    return tuple(out)
