"""Sequential, decisive re-validation: measure interleaved rounds until each contender is decided.

A fixed number of rounds ends many studies with intervals like [0.814, 2.358]: "no significant
winner" that really means "not measured enough to decide". Here rounds continue until the
speed-up interval of every contender against the default either

* lies above ``1 + min_effect``: **winner** (with ``plan.winner_floor``: lies above
  ``1 + winner_floor`` with its point estimate above ``1 + min_effect``);
* lies below ``1 + min_effect`` (inside +-min_effect, or slower): **not faster**;
* or lies below the lower end of a route already declared winner, or the contender is
  significantly slower than the leading contender (paired with it round by round):
  **outclassed** (it cannot be the best, so measuring it further is wasted);

or until the round budget (``max_rounds``) or the time budget (``max_time_s``) is spent: then the
contender, and the study if nothing won, is **inconclusive**, with the number of rounds that
would have decided it projected from the interval's current width (width shrinks as 1/sqrt(n)).

Evidence: each round measures the default and every undecided contender once, each in a FRESH
process (``measure_fresh(number, round_index) -> samples_ms``), in a new random order. The unit of
evidence is the per-process median; a contender's median is divided by the default's median of
the same round (paired, so slow drift shared by the round cancels). Intervals on these log ratios
come from :mod:`gptuner_core.measurement.paired`: the t-interval, or, when regimes (bimodal
per-process medians) are detected, the distribution-free signed-rank interval over the rounds
whose two processes landed in the same regime (``method="auto"`` -> ``"matched"``).

Error control under sequential stopping: alpha spending (Pocock by default) with a union bound
over looks and a Bonferroni split over contenders, see :mod:`gptuner_core.measurement.boundaries`:
the chance of any false winner is at most ``(1 - confidence) / 2``, however the study stops.
Pocock is the default because it spends error early, so a clear effect is decided in a few rounds
(the time budget counts); O'Brien-Fleming keeps almost all of it for the last look.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import numpy as np

from gptuner_core.errors import ConfigError
from gptuner_core.errors import GptunerError
from gptuner_core.measurement.boundaries import look_alphas
from gptuner_core.measurement.paired import METHOD_TEXT
from gptuner_core.measurement.paired import LogInterval
from gptuner_core.measurement.regimes import Regimes
from gptuner_core.measurement.regimes import detect_regimes
from gptuner_core.measurement.round_pairs import paired_interval
from gptuner_core.measurement.round_pairs import separated
from gptuner_core.measurement.round_pairs import slower_than_leader
from gptuner_core.measurement.round_pairs import tie_group
from gptuner_core.measurement.stats import SpeedupEstimate
from gptuner_core.measurement.verdicts import ContenderVerdict
from gptuner_core.measurement.verdicts import SequentialPlan
from gptuner_core.measurement.verdicts import SequentialResult
from gptuner_core.measurement.verdicts import Verdict
from gptuner_core.records.confidence import percent
from gptuner_core.records.undecided import more_rounds
from gptuner_core.records.verdict_text import CUT_SHORT


def _projected(n: int, iv: LogInterval, threshold: float) -> int | None:
    """Rounds at which an interval of this width (shrinking as 1/sqrt(n)) would clear ``threshold``."""
    if iv.low is None or iv.high is None:
        return None
    half, gap = (iv.high - iv.low) / 2.0, abs(iv.centre - threshold)
    if gap < 1e-9:
        return None
    return max(n + 1, math.ceil(n * (half / gap) ** 2))


#: beyond this log-ratio a bound is not a float: a few rounds at a very high confidence
#: (``gate --confidence 0.9999 --max-rounds 2``) gave e^900, and ``math.exp`` raised
#: OverflowError through the CLI
_MAX_LOG = math.log(1e300)


def _estimate(iv: LogInterval, n: int, alpha: float) -> SpeedupEstimate:
    unbounded = any(b is not None and abs(b) > _MAX_LOG for b in (iv.low, iv.high))
    return SpeedupEstimate(
        point=math.exp(max(-_MAX_LOG, min(iv.centre, _MAX_LOG))),
        low=None if iv.low is None or unbounded else math.exp(iv.low),
        high=None if iv.high is None or unbounded else math.exp(iv.high),
        confidence=1.0 - alpha, method=METHOD_TEXT[iv.method], n_default=n, n_candidate=n,
        note=f"no finite interval at {1.0 - alpha:.4%} confidence after {n} rounds" if unbounded else iv.note,
    )


def _usable(number: int, round_index: int, samples: Any) -> float:
    arr = np.asarray(list(samples), float)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        msg = (
            f"re-measurement of route #{number} in round {round_index} returned no usable "
            f"samples (expected > 0 ms each, got {arr.size} values)"
        )
        raise ConfigError(msg)
    return float(np.median(arr))


def _validate(contenders: Sequence[int], default: int) -> list[int]:
    cands = list(contenders)
    if not cands:
        msg = "re-validation needs at least one candidate besides the default (got none)"
        raise ConfigError(msg)
    if any(isinstance(c, bool) or not isinstance(c, int) for c in [*cands, default]):
        msg = f"candidate numbers must be integers (got candidates={cands!r}, default={default!r})"
        raise ConfigError(msg)
    if len(set(cands)) != len(cands) or default in cands:
        msg = f"candidates must be unique and exclude the default #{default} (got {cands})"
        raise ConfigError(msg)
    return cands


def _pct(x: float) -> str:
    return f"{x * 100:g}%"


def _message(res: dict[str, Any], plan: SequentialPlan, k: int) -> str:
    verdict, winner, best, rounds = res["verdict"], res["winner"], res["best"], res["rounds"]
    est: dict[int, SpeedupEstimate | None] = res["estimates"]
    adj = f", Bonferroni over {k}" if k > 1 else ""
    how = (f"{rounds} interleaved rounds in fresh processes, {plan.spending} alpha spending{adj}: "
           f"wider per-look intervals, {percent(plan.confidence)} confidence over every look and route")
    thr = 1.0 + plan.min_effect
    if verdict is Verdict.WINNER:
        tie = ""
        if res["tied"]:
            others = " and ".join(f"#{c}" for c in res["tied"])
            tie = (f"; {others} {'ties' if len(res['tied']) == 1 else 'tie'} with it within "
                   f"{_pct(plan.min_effect)} (the rounds do not separate them)")
        return f"route #{winner} is faster than the default: {est[winner]} ({how}){tie}"
    if rounds == 0:  # cut short by Stop, or no round fitted the time budget
        why0 = (f"{CUT_SHORT} before its first round" if res["stop_reason"] == "stopped"
                else "the time budget was spent before re-validation could measure a round")
        return f"inconclusive: {why0}; keeping the default route"
    if best is None:
        return (
            "inconclusive: every re-measured candidate failed; keeping the default route"
        )
    e = est[best]
    if verdict is Verdict.NOT_FASTER:
        return (
            f"no route is faster than the default by more than {_pct(plan.min_effect)} "
            f"(best: #{best} {e}; {how}); keeping the default route"
        )
    why = {"max_rounds": "round budget spent", "max_time": "time budget spent",
           "stopped": CUT_SHORT}.get(res["stop_reason"], res["stop_reason"])
    more = more_rounds(res["projected"], not (e is not None and (e.low is None or e.high is None)))
    return (
        f"inconclusive after {rounds} rounds ({why}): best #{best} {e} neither clears "
        f"{thr:.3g}x nor rules it out; {more}; keeping the default route"
    )


def revalidate_sequential(
    contenders: Sequence[int],
    default: int,
    measure_fresh: Callable[[int, int], Sequence[float]],
    plan: SequentialPlan | None = None,
    *,
    seed: int = 0,
    on_round: Callable[[int, int, tuple[int, ...]], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    per_route_hint_s: float | None = None,
    prefer: Callable[[int], Any] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SequentialResult:
    """Re-measure ``contenders`` against ``default`` in interleaved rounds until each is decided.

    Args:
        contenders: candidate numbers (the default excluded), e.g. the screening top-K.
        default: the default route's number (usually 0).
        measure_fresh: ``(number, round_index) -> samples_ms`` measuring that route in a fresh
            process. A :class:`~gptuner_core.errors.GptunerError` drops a contender (status
            ``"failed"``); for the default it propagates. Its optional ``prefetch`` attribute
            gets, before each round runs, ``[(number, round_index), ...]``: the round's order,
            then every later round's as it will be if no contender is decided meanwhile (the
            caller starts as many of those processes as it has room for, so they load while
            earlier rounds measure; one for a route decided meanwhile is never measured).
        plan: a :class:`SequentialPlan` (defaults: 1 % min-effect, 95 %, 3..20 rounds, Pocock).
        seed: seed of the per-round random order.
        on_round: called after each round with ``(rounds_done, max_rounds, undecided)``.
        clock: seconds, for the time budget.
        per_route_hint_s: one route's measurement, estimated before any round (screening's):
            with ``max_time_s``, a first round that would not finish in time is not started
            (the study's time budget is kept; the verdict is inconclusive after 0 rounds).
        prefer: ``number -> key`` (smaller first), the documented order that names one route
            among winners the rounds do not separate (:func:`tie_group`); ``None``: the lower
            number. Timing noise decides nothing there: see :func:`tie_group`.
        should_stop: asked before each round; ``True`` (Stop) cuts it short: ``"stopped"``.

    Returns:
        A :class:`SequentialResult`; its ``verdict`` is winner / not_faster / inconclusive.
    """
    plan = plan or SequentialPlan()
    cands = _validate(contenders, default)
    looks = plan.looks
    alphas = dict(zip(looks, look_alphas(looks, plan.max_rounds, 1 - plan.confidence,
                                         plan.spending, len(cands)), strict=True))
    threshold = math.log(1.0 + plan.min_effect)
    floor = threshold if plan.winner_floor is None else math.log(1.0 + plan.winner_floor)
    rng = np.random.default_rng(seed)
    t0 = clock()
    medians: dict[int, list[float | None]] = {r: [] for r in [default, *cands]}
    status = dict.fromkeys(cands, "inconclusive")
    last: dict[int, tuple[LogInterval, float, str, Regimes]] = {}
    decided_at: dict[int, int] = {}
    errors: dict[int, str] = {}
    order: list[tuple[int, ...]] = []
    measured_s: list[float] = []
    stop_reason = "max_rounds"
    tie_lead: int | None = None  # the leading winner, measured on beside its possible ties

    def evaluate(c: int, n: int, alpha: float) -> tuple[LogInterval, str, Regimes]:
        iv, c_reg = paired_interval(medians, default, c, alpha, plan.method)
        return iv, iv.method, c_reg

    for round_index in range(plan.max_rounds):
        active = [c for c in cands if status[c] == "inconclusive"]
        if not active or (should_stop is not None and should_stop()):
            stop_reason = "stopped" if active else "decided"
            break
        if plan.max_time_s is not None and (measured_s or per_route_hint_s):
            per_route = float(np.mean(measured_s)) if measured_s else float(per_route_hint_s or 0.0)
            if clock() - t0 + per_route * (1 + len(active)) > plan.max_time_s:
                stop_reason = "max_time"
                break
        routes = [default, *active, *([tie_lead] if tie_lead is not None else [])]
        this = tuple(int(routes[i]) for i in rng.permutation(len(routes)))
        order.append(this)
        hint = getattr(measure_fresh, "prefetch", None)  # start the round's processes together
        if hint is not None:  # and the later rounds', should nothing be decided meanwhile
            ahead = copy.deepcopy(rng)  # the same draws the later rounds make with these routes
            hint([(number, round_index) for number in this] + [
                (int(routes[i]), later) for later in range(round_index + 1, plan.max_rounds)
                for i in ahead.permutation(len(routes))])
        for r in medians:
            medians[r].append(None)
        for number in this:
            start = clock()
            try:
                medians[number][round_index] = _usable(
                    number, round_index, measure_fresh(number, round_index)
                )
            except GptunerError as exc:
                if number == default:
                    raise
                status[number], errors[number] = "failed", str(exc)
            measured_s.append(clock() - start)
        n = round_index + 1
        if n in alphas:
            for c in active:
                if status[c] != "inconclusive":
                    continue
                iv, method, reg = evaluate(c, n, alphas[n])
                last[c] = (iv, alphas[n], method, reg)
                if iv.low is not None and iv.low > floor and iv.centre > threshold:
                    status[c], decided_at[c] = "winner", n
                elif iv.high is not None and iv.high < threshold:
                    status[c], decided_at[c] = "not_faster", n
            won = [last[c][0].low for c in cands if status[c] == "winner"]
            if won:  # an undecided contender the leading winner is not separated from may tie
                lead = max((c for c in cands if status[c] == "winner"),
                           key=lambda c: (last[c][0].centre, -c))
                open_ties = [c for c in cands if status[c] == "inconclusive" and c in last
                             and not separated(medians, lead, c, alphas[n], plan)]
            if won and plan.stop_at_winner and not open_ties:
                stop_reason = "decided"
                if on_round is not None:
                    on_round(n, plan.max_rounds, ())
                break
            if won and plan.stop_at_winner:  # measure the possible ties on, beside the leader
                tie_lead = lead
                for c in cands:
                    if status[c] == "inconclusive" and c not in open_ties:
                        status[c], decided_at[c] = "outclassed", n
            if won:
                bar = max(w for w in won if w is not None)
                for c in cands:
                    if status[c] == "inconclusive" and c in last:
                        high = last[c][0].high
                        if high is not None and high < bar:
                            status[c], decided_at[c] = "outclassed", n
            for c in slower_than_leader(medians, cands, status, last, alphas[n], plan.method):
                status[c], decided_at[c] = "outclassed", n
        if on_round is not None:
            on_round(n, plan.max_rounds, tuple(c for c in cands if status[c] == "inconclusive"))
    else:
        if all(status[c] != "inconclusive" for c in cands) or any(
            status[c] == "winner" for c in cands
        ):
            stop_reason = "decided"
    rounds = len(order)

    verdicts: list[ContenderVerdict] = []
    estimates: dict[int, SpeedupEstimate | None] = {}
    projections: list[int | None] = []
    next_alpha = next((alphas[k] for k in looks if k >= rounds), alphas[looks[-1]])
    for c in cands:
        n_c = sum(m is not None for m in medians[c])
        if status[c] == "inconclusive" and n_c >= 1:
            # Not decided at its last look: report it at the level its next look would use.
            iv, method, reg = evaluate(c, rounds, next_alpha)
            alpha = next_alpha
        elif c in last:
            iv, alpha, method, reg = last[c]
        else:
            iv, alpha, method, reg = None, 0.0, "", None
        est = _estimate(iv, n_c, alpha) if iv is not None else None
        estimates[c] = est
        proj = _projected(rounds, iv, threshold) if (iv and status[c] == "inconclusive") else None
        if status[c] == "inconclusive":
            projections.append(proj)
        verdicts.append(ContenderVerdict(
            number=c, status=status[c], estimate=est, rounds=n_c, decided_at=decided_at.get(c),
            method=method, regimes=reg, projected_rounds=proj, error=errors.get(c, ""),
        ))
    scored = [c for c in cands if estimates[c] is not None and status[c] != "failed"]
    best = max(scored, key=lambda c: (estimates[c].point, -c)) if scored else None
    winners = [c for c in cands if status[c] == "winner"]
    winner, tied = None, ()
    if winners:
        last_look = max((k for k in looks if k <= rounds), default=looks[0])
        group = tie_group(medians, winners, estimates, alphas[last_look], plan)
        winner = min(group, key=lambda c: (prefer(c) if prefer is not None else (), c))
        tied = tuple(sorted(c for c in group if c != winner))
    if winner is not None:
        verdict = Verdict.WINNER
    elif any(s == "not_faster" for s in status.values()) and all(
        s in ("not_faster", "outclassed", "failed") for s in status.values()
    ):  # an outclassed route is slower than one that is not faster
        verdict = Verdict.NOT_FASTER
    else:
        verdict = Verdict.INCONCLUSIVE
    projected = None
    if verdict is Verdict.INCONCLUSIVE and projections and all(p is not None for p in projections):
        projected = max(p for p in projections if p is not None)
    message = _message(
        {"verdict": verdict, "winner": winner, "best": best, "rounds": rounds,
         "estimates": estimates, "stop_reason": stop_reason, "projected": projected,
         "tied": tied},
        plan, len(cands),
    )
    return SequentialResult(
        verdict=verdict, winner=winner, best=best, default=default, contenders=tuple(verdicts),
        rounds=rounds, looks=tuple(k for k in looks if k <= rounds), stop_reason=stop_reason,
        plan=plan, message=message, elapsed_s=clock() - t0, projected_rounds=projected,
        tied=tied, schedule=tuple(order), round_medians={r: tuple(v) for r, v in medians.items()},
        default_regimes=detect_regimes(
            [m for m in medians[default] if m is not None], route=default
        ),
    )
