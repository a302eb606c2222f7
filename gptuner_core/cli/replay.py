"""``gptuner replay``: what would strategy X have found with budget B on a recorded sweep?"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError
from gptuner_core.cli._base import at_least


if TYPE_CHECKING:
    import argparse

    from gptuner_core.recording import Recording
    from gptuner_core.routes import Route
    from gptuner_core.views.curves import RandomBaseline


#: replay seeds at most: each seed of a large space takes minutes (99999999999 ran until killed)
MAX_SEEDS = 1000


class ReplayCommand(Command):
    name = "replay"
    help = "replay a search strategy on a recorded study (offline, deterministic)"
    description = (
        "Answer a strategy's proposals from a recorded study (a study folder or a recording\n"
        "JSON, e.g. one written by 'gptuner import --format t4|kerneltuner') by route, without\n"
        "building anything, and report the best speed-up it would have found within the budget,\n"
        "as a fraction of the recording's optimum, with its best-so-far curve against builds and\n"
        "build seconds beside random search's expectation. Routes missing from the recording\n"
        "count as failed builds (infeasible ones, for an imported exhaustive space)."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from gptuner_core.strategies import DEFAULT_STRATEGY

        parser.add_argument("study", metavar="STUDY", help="study folder or recording JSON")
        parser.add_argument("--search", default=DEFAULT_STRATEGY, metavar="NAME[,NAME...]",
                            help=f"strategies to replay, comma-separated (default: {DEFAULT_STRATEGY})")
        parser.add_argument("--budget", default=None, metavar="N|P%",
                            help="builds, or a percentage of the full space (default: 20%% of "
                            "the space, at most 200 builds)")
        parser.add_argument("--seeds", type=at_least(1, MAX_SEEDS), default=1, metavar="K",
                            help=f"replay seeds 0..K-1 (default: 1; at most {MAX_SEEDS})")
        parser.add_argument("--strategy-option", action="append", default=[], metavar="KEY=VALUE")
        parser.add_argument("--warm-start", action="append", default=[], metavar="STUDY_OR_RECORDING",
                            help="start from what an earlier study or recording of the same knobs learned")
        parser.add_argument("--trace", action="store_true", help="print every proposal")
        parser.add_argument("--no-curve", action="store_true", help="leave out the best-so-far curves")

    def run(self, args: argparse.Namespace) -> int:
        import warnings

        from gptuner_core.engine.loop.simulate import DEFAULT_BUDGET_BUILDS
        from gptuner_core.engine.loop.simulate import DEFAULT_BUDGET_SHARE
        from gptuner_core.engine.loop.simulate import default_budget
        from gptuner_core.engine.loop.simulate import parse_budget
        from gptuner_core.engine.loop.simulate import single_threaded_blas
        from gptuner_core.recording import load_recording
        from gptuner_core.strategies import strategy_names
        from gptuner_core.views.curves import random_baseline

        if args.seeds < 1:
            msg = f"--seeds must be >= 1 (got {args.seeds})"
            raise UsageError(msg)
        names = [n.strip() for n in str(args.search).split(",") if n.strip()]
        unknown = [n for n in names if n not in strategy_names()]
        if unknown or not names:
            msg = f"--search: unknown strategy {unknown[0] if unknown else '(none)'!r} (expected one of {', '.join(strategy_names())})"
            raise UsageError(msg)
        opts = {}
        for item in args.strategy_option:
            key, eq, value = item.partition("=")
            if not eq or not key:
                msg = f"--strategy-option expects KEY=VALUE (got {item!r})"
                raise UsageError(msg)
            if key == "seed":  # each replay's seed is one of 0..K-1
                msg = (f"--strategy-option seed={value}: replay sets the strategy's seed itself, one run "
                       "per seed 0..K-1 (expected --seeds K instead)")
                raise UsageError(msg)
            opts[key] = value
        warnings.simplefilter("ignore", FutureWarning)
        recording = load_recording(args.study)  # loaded and indexed once for every seed
        space = recording.expression.count("full")
        if args.budget is None:
            budget = default_budget(space)
            print(f"budget: {budget:,} builds (the default: {DEFAULT_BUDGET_SHARE:.0%} of the space's "
                  f"{space:,} routes, at most {DEFAULT_BUDGET_BUILDS}; --budget N or P% to change)")
        else:
            budget = parse_budget(args.budget, space)
        if budget > space:  # as '150%' is refused: more builds than routes is no budget
            msg = (f"--budget: at most the space's {space} routes (100%) can be built (got {args.budget!r})")
            raise UsageError(msg)
        warm = _warm_start(recording, args.warm_start)
        prior = None  # every result of the warm-start sources, for strategies that model (bo)
        if warm:
            from gptuner_core.strategies.warm_start import load_prior

            prior = load_prior(args.warm_start, recording.expression)
        rand = None if args.no_curve else random_baseline(recording, budget)
        if not args.no_curve and rand is None:
            from gptuner_core.views.curves import baseline_note

            print(baseline_note(recording))
        with single_threaded_blas():
            self._replay(args, names, recording, budget, warm, prior, rand, opts)
        return 0

    @staticmethod
    def _replay(args: argparse.Namespace, names: list[str], recording: Recording, budget: int,
                warm: list[Route], prior: object, rand: RandomBaseline | None, opts: dict) -> None:
        from gptuner_core.engine.loop.simulate import simulate

        for name in names:
            results = []
            for seed in range(args.seeds):
                res = simulate(name, recording, budget, seed, warm_start=warm, prior=prior, **opts)
                results.append(res)
                print(f"seed {seed}: {res.best_speedup:.3f}x = {100 * res.found_optimum_fraction:.1f}% "
                      f"of the optimum with {res.builds_used}/{res.space_size} builds"
                      f"{' (strategy finished)' if res.exhausted else ''}: {res.best_route or '-'}",
                      flush=True)  # a seed of a large space takes minutes: show it in a piped log
                if args.trace:
                    for s in res.trace:
                        ms = f"{s.observed_ms:.4f} ms" if s.observed_ms is not None else "-"
                        print(f"  [{s.number}] {s.state:<13} {ms:>12}  {s.route}")
            _summary(name, recording, results, rand)


def _warm_start(recording: Recording, sources: list[str]) -> list[Route]:
    """Routes of the earlier studies / recordings, as ``tune --warm-start`` takes them."""
    if not sources:
        return []
    from gptuner_core.recording import load_recording
    from gptuner_core.strategies.warm_start import check_sources
    from gptuner_core.strategies.warm_start import model_family
    from gptuner_core.strategies.warm_start import warm_start_routes

    check_sources(sources, recording.db, model_family(recording.config))  # as tune refuses them
    warm = warm_start_routes(sources, recording.expression, db=recording.db,
                             model_family_name=model_family(recording.config))
    print(f"warm start from {', '.join(sources)}: {len(warm)} route(s)"
          + ("" if warm else " (no study of the same knob database or model family)"))
    for src in sources:
        rho, shared = rank_agreement(recording, load_recording(src))
        if shared >= 3:
            print(f"  {src}: {shared:,} routes measured in both, rank correlation (Spearman) {rho:.3f}")
    return warm


def rank_agreement(a: Recording, b: Recording) -> tuple[float, int]:
    """Spearman rank correlation of the recorded latencies of the routes both measured."""
    import numpy as np

    pairs = []
    for key, rec in a.by_key.items():
        other = b.by_key.get(key)
        if rec.eligible and other is not None and other.eligible and rec.latency and other.latency:
            pairs.append((rec.latency.median_ms, other.latency.median_ms))
    if len(pairs) < 3:
        return 0.0, len(pairs)
    x, y = (np.argsort(np.argsort(np.asarray(col))) for col in zip(*pairs, strict=True))
    return float(np.corrcoef(x, y)[0, 1]), len(pairs)


def _summary(name: str, recording: Recording, results: list, rand: RandomBaseline | None) -> None:
    first = results[0]
    fr = [r.found_optimum_fraction for r in results]
    print(f"optimum: {first.optimum_speedup:.3f}x ({first.optimum_route})")
    print(f"{name}, budget {first.budget} builds: mean {100 * statistics.fmean(fr):.1f}%, "
          f"worst {100 * min(fr):.1f}% of the optimum over {len(results)} seed(s)")
    steps = [s for r in results for s in r.trace if not s.remeasure and s.number > 0]
    if steps:
        failed = sum(s.state != "COMPLETE" for s in steps) / len(steps)
        expect = f" (random search: {100 * rand.failed_share:.0f}%)" if rand else ""
        print(f"{name}: {100 * failed:.0f}% of the builds after the default went to failed or "
              f"infeasible routes{expect}")
    missing = sorted({m for r in results for m in r.missing})
    if missing and recording.exhaustive:
        print(f"{len(missing)} proposed route(s) infeasible (absent from the recorded space: a "
              f"failed build each), e.g. {missing[0]}")
    elif missing:
        print(f"{len(missing)} proposed route(s) missing from the recording (counted as "
              f"BUILD_FAILED), e.g. {missing[0]}")
    if len(results) > 1 and len({tuple(s.route for s in r.trace) for r in results}) == 1:
        print(f"note: all {len(results)} seeds proposed the same routes ('{name}' does not use its seed here)")
    if rand is not None:
        print(curve_text(name, recording, results, rand))


def _seconds(t: float) -> str:
    """A build-seconds cell: three significant figures below 1,000 s, whole seconds with
    thousands separators above (``1.97e+03`` filled all 8 characters of a cell)."""
    return f"{t:.3g}" if t < 1000 else f"{t:,.0f}"


def curve_text(name: str, recording: Recording, results: list, rand: RandomBaseline) -> str:
    """The best-so-far table: % of the optimum against builds and build seconds, mean of the
    seeds, beside random search's expectation (exact by builds; from random draws by seconds)."""
    from gptuner_core.views.curves import checkpoints
    from gptuner_core.views.curves import trace_curve

    curves = [trace_curve(r, recording) for r in results]
    budget = results[0].budget
    ks = checkpoints(budget)
    width = max(len(name), len("E[random]")) + 1
    lines = [f"{name}, best so far (% of the optimum; mean of {len(results)} seed(s)) beside random "
             "search's expectation:"]

    def row(label: str, values: list[float]) -> str:
        return f"  {label:<{width}}" + "".join(f" {v:>7.1f}" for v in values)

    lines.append(f"  {'builds':<{width}}" + "".join(f" {k:>7,d}" for k in ks))
    lines.append(row(name, [100 * statistics.fmean(c.at_build(k) for c in curves) for k in ks]))
    lines.append(row("E[random]", [100 * rand.expected_at(k) for k in ks]))
    spent = statistics.fmean(c.seconds[-1] if c.seconds else 0.0 for c in curves)
    if spent > 0:
        ts = [spent * f for f in (0.05, 0.1, 0.25, 0.5, 1.0)]
        lines.append(f"  {'build s':<{width}}" + "".join(f" {_seconds(t):>7}" for t in ts))
        lines.append(row(name, [100 * statistics.fmean(c.at_seconds(t) for c in curves) for t in ts]))
        lines.append(row("E[random]", [100 * rand.expected_at_seconds(t) for t in ts]))
    return "\n".join(lines)
