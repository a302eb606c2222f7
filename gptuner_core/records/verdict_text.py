"""The one formatter of a study's :class:`~gptuner_core.records.study.Winner`, used by every surface
(CLI ``show``/``explain``/``tune``, the report, the bundle, every dashboard page, the progress line).

Three texts, from short to long:

* :func:`headline`: one line, the verdict first (``winner: route #5, 2.124x faster ...`` or
  ``no winner: keeping the default (...)``);
* :func:`sentence`: one or two plain sentences: what won or why nothing did, by how much with
  the interval and its confidence, after how many rounds and, when undecided, about how many more
  rounds (or a quieter machine) would decide. No statistical jargon;
* :func:`details`: the method and the tuner's full message, for a details view only.

Screening numbers (one process per route) are never the verdict: :func:`screening_label` names
them as such wherever they are shown after it.
"""

from __future__ import annotations

from typing import Protocol


class Winner(Protocol):
    """The fields of :class:`gptuner_core.records.study.Winner` these texts read. The record renders
    itself through them (``Winner.headline()``...), so naming the class here would make the two
    modules one import circle."""

    verdict: str
    number: int
    speedup: float
    ci: tuple[float, float] | None
    message: str
    best: int | None
    best_speedup: float | None
    best_ci: tuple[float, float] | None
    rounds: int
    method: str
    projected_rounds: int | None
    confidence: float
    min_effect: float
    tied: tuple[int, ...]
    tie: str
    busy_share: float | None
    replayed: bool


NO_WINNER = "no winner: keeping the default"
SCREENING = "screening (one process per route, not the verdict)"


def _x(value: float | None) -> str:
    return "?" if value is None else f"{value:.3f}x"


def _ci(pair: tuple[float, float] | None) -> str:
    return f"[{pair[0]:.3f}, {pair[1]:.3f}]" if pair else ""


def _pct(value: float) -> str:
    return f"{value * 100:.3g}%"


def _rounds(n: int) -> str:
    return f"{n} round{'s' if n != 1 else ''}"


def _remeasured(w: Winner) -> str:
    """How the rounds measured: ``"re-measurement"``, or the recording's samples for a replay."""
    return "the recording's samples (replayed: nothing ran)" if w.replayed else "re-measurement"


#: what a re-validation ended by Stop says (in its message, so in the verdict's sentence too)
CUT_SHORT = "re-validation cut short by a stop request"


def reason(w: Winner) -> str:
    """Why the default is kept, in a few words (``""`` for a winner)."""
    v = w.verdict.value
    if v == "winner":
        return ""
    if v == "inconclusive" and CUT_SHORT in w.message:
        return f"{CUT_SHORT} after {_rounds(w.rounds)}" if w.rounds else CUT_SHORT
    if v == "inconclusive":
        undecided = f"undecided after {_rounds(w.rounds)}" if w.rounds else "undecided"
        return f"{too_busy(w)}; {undecided}" if w.busy_share is not None else undecided
    if v == "not_faster":
        return f"no route is faster by more than {_pct(w.min_effect)}"
    if v == "default_only":
        return "no other eligible route"
    if v == "not_revalidated":
        return "nothing cleared the screening, which was not re-validated"
    return "re-validation failed"


def too_busy(w: Winner) -> str:
    """``the machine was too busy to decide (...): close them and run it again`` (see
    ``engine.decide.verdict.too_busy``)."""
    return busy_words(w.busy_share or 0.0)


def busy_words(share: float, what: str = "it") -> str:
    """What an undecided comparison on a busy machine says first: other programs ran beside
    ``share`` of its measurements, so close them and run ``what`` (the study, the gate) again."""
    return (f"the machine was too busy to decide (other programs ran during {_pct(share)} of the "
            f"measurements): close them and run {what} again")


def headline(w: Winner) -> str:
    """The one line every surface shows first."""
    if w.verdict.value == "winner":
        rounds = f", after {_rounds(w.rounds)}" if w.rounds else ""
        ci = f" {_ci(w.ci)}" if w.ci else ""
        tie = f" ({w.tie})" if w.tie else ""
        return f"winner: route #{w.number}, {_x(w.speedup)} faster{ci}{rounds}{tie}"
    if w.verdict.value == "not_revalidated" and w.number:
        return (f"screening pick (not re-validated): route #{w.number}, {_x(w.speedup)} "
                f"{_ci(w.ci)}").rstrip()
    return f"{NO_WINNER} ({reason(w)})"


def _leader(w: Winner) -> str:
    """``route #2 measured 1.027x [0.950, 1.110]`` for the best contender (re-validated)."""
    if w.best is None or w.best_speedup is None:
        return ""
    ci = f" {_ci(w.best_ci)}" if w.best_ci else " (too few rounds for an interval)"
    return f"route #{w.best} measured {_x(w.best_speedup)}{ci}"


def sentence(w: Winner) -> str:
    """One or two plain sentences for a person (see the module docstring)."""
    conf = _pct(w.confidence)
    thr = f"{1 + w.min_effect:.3g}x"
    v = w.verdict.value
    if v == "winner":
        ci = f" ({_ci(w.ci)} with {conf} confidence)" if w.ci else ""
        tie = ""
        if w.tied:
            others = " and ".join(f"#{n}" for n in w.tied)
            tie = (f" {others} {'is' if len(w.tied) == 1 else 'are'} as fast within "
                   f"{_pct(w.min_effect)}: the rounds do not separate them, so the tie is named "
                   f"by a fixed rule ({w.tie.rpartition('(')[2].rstrip(')') or 'lower number'} first).")
        how = (f"compared with it over {_rounds(w.rounds)} of the recording's samples (replayed: "
               "nothing ran)" if w.replayed
               else f"re-measured against it in {_rounds(w.rounds)} of fresh processes" if w.rounds
               # a winner stored before the record kept its round count: no "0 rounds"
               else "re-measured against it in fresh processes")
        return f"Route #{w.number} is {_x(w.speedup)} faster than the default{ci}, {how}.{tie}"
    lead = _leader(w)
    if v == "inconclusive" and CUT_SHORT in w.message:
        done = f" after {_rounds(w.rounds)}" if w.rounds else " before its first round"
        return (f"No route was shown faster: re-validation was cut short by a stop request{done}, "
                "so the default is kept. Resume the study to re-validate again.")
    if v == "inconclusive" and not w.rounds:
        return ("No route was re-measured before the time budget ran out, so the default is kept. "
                "A larger --time-budget would let re-validation decide.")
    if v == "inconclusive":
        first = (f"No route was shown faster after {_rounds(w.rounds)} of {_remeasured(w)}, "
                 "so the default is kept")
        if lead:
            first += (f": the closest, {lead} with {conf} confidence, neither clears {thr} "
                      "nor rules it out")
        if w.busy_share is not None:  # the headline says "too busy" first; this says why, once
            more = (f"Other programs ran during {_pct(w.busy_share)} of the measurements: close them "
                    "and run the study again; more rounds on a machine this busy would not settle it.")
        elif w.projected_rounds and w.projected_rounds > w.rounds:
            more = (f"About {w.projected_rounds - w.rounds} more rounds "
                    f"({w.projected_rounds} in all), or a quieter machine, would decide.")
        elif lead and w.best_ci:
            more = "More rounds would not decide it: its speed-up sits at the threshold."
        else:
            more = "More rounds, or a quieter machine, are needed to decide."
        return f"{first}. {more}"
    if v == "not_faster":
        tail = f" (the closest, {lead} with {conf} confidence)" if lead else ""
        return (f"No route is faster than the default by more than {_pct(w.min_effect)} after "
                f"{_rounds(w.rounds)} of {_remeasured(w)}{tail}, so the default is kept.")
    if v == "default_only":
        return "No eligible route other than the default was found, so the default is kept."
    if v == "not_revalidated":
        if w.number:
            return (f"Route #{w.number} screened {_x(w.speedup)} {_ci(w.ci)} in one process per "
                    "route; it was not re-validated (--revalidate-top-k 0), so treat it as a lead.")
        return (f"The best screened route, #{w.best}, measured {_x(w.best_speedup)}, which does "
                f"not clear {thr}; nothing was re-validated, so the default is kept.")
    return f"Re-validation could not measure ({w.message}), so the default is kept."


def details(w: Winner) -> str:
    """How the verdict was measured (method, the tuner's full message): a details view only."""
    parts = [p for p in (w.method, w.message) if p]
    return "; ".join(parts)


def screening_label(speedup: float | None, ci: tuple[float, float] | None = None) -> str:
    """``screening 1.212x (one process per route, not the verdict)``."""
    spread = f" {_ci(ci)}" if ci else ""
    return f"screening {_x(speedup)}{spread} (one process per route, not the verdict)"


def recommended(winner: dict | None) -> int | None:
    """The route a stored verdict (``winner`` meta) recommends over the default, else ``None``:
    what a chart may star as the winner (the default is never drawn as one)."""
    if not winner:
        return None
    verdict = winner.get("verdict") or ("winner" if winner.get("significant") else "")
    number = int(winner.get("number") or 0)
    return number if verdict in ("winner", "not_revalidated") and number else None
