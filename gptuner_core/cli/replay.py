"""``gptuner replay``: what would strategy X have found with budget B on a recorded sweep?"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError


if TYPE_CHECKING:
    import argparse


class ReplayCommand(Command):
    name = "replay"
    help = "replay a search strategy on a recorded study (offline, deterministic)"
    description = (
        "Answer a strategy's proposals from a recorded study (a study folder or a recording\n"
        "JSON) by route, without building anything, and report the best speed-up it would\n"
        "have found within the budget, as a fraction of the recording's optimum. Routes missing\n"
        "from the recording count as build failures and are reported."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from gptuner_core.strategies import DEFAULT_STRATEGY
        from gptuner_core.strategies import strategy_names

        parser.add_argument("study", metavar="STUDY", help="study folder or recording JSON")
        parser.add_argument("--search", default=DEFAULT_STRATEGY, choices=strategy_names(),
                            help=f"strategy to replay (default: {DEFAULT_STRATEGY})")
        parser.add_argument("--budget", default="20%", metavar="N|P%",
                            help="builds, or a percentage of the full space (default: 20%%)")
        parser.add_argument("--seeds", type=int, default=1, metavar="K",
                            help="replay seeds 0..K-1 (default: 1)")
        parser.add_argument("--strategy-option", action="append", default=[], metavar="KEY=VALUE")
        parser.add_argument("--trace", action="store_true", help="print every proposal")

    def run(self, args: argparse.Namespace) -> int:
        import warnings

        from gptuner_core.engine.simulate import simulate

        if args.seeds < 1:
            msg = f"--seeds must be >= 1 (got {args.seeds})"
            raise UsageError(msg)
        opts = {}
        for item in args.strategy_option:
            key, eq, value = item.partition("=")
            if not eq or not key:
                msg = f"--strategy-option expects KEY=VALUE (got {item!r})"
                raise UsageError(msg)
            opts[key] = value
        from gptuner_core.recording import load_recording

        warnings.simplefilter("ignore", FutureWarning)
        recording = load_recording(args.study)  # loaded and indexed once for every seed
        results = []
        for seed in range(args.seeds):
            res = simulate(args.search, recording, args.budget, seed, **opts)
            results.append(res)
            print(f"seed {seed}: {res.best_speedup:.3f}x = {100 * res.found_optimum_fraction:.1f}% "
                  f"of the optimum with {res.builds_used}/{res.space_size} builds"
                  f"{' (strategy finished)' if res.exhausted else ''}: {res.best_route or '-'}")
            if args.trace:
                for s in res.trace:
                    ms = f"{s.observed_ms:.4f} ms" if s.observed_ms is not None else "-"
                    print(f"  [{s.number}] {s.state:<13} {ms:>12}  {s.route}")
        first = results[0]
        fr = [r.found_optimum_fraction for r in results]
        print(f"optimum: {first.optimum_speedup:.3f}x ({first.optimum_route})")
        print(f"{args.search}, budget {first.budget} builds: mean {100 * statistics.fmean(fr):.1f}%, "
              f"worst {100 * min(fr):.1f}% of the optimum over {len(results)} seed(s)")
        missing = sorted({m for r in results for m in r.missing})
        if missing and recording.exhaustive:
            print(f"{len(missing)} proposed route(s) infeasible (absent from the recorded space: a "
                  f"failed build each), e.g. {missing[0]}")
        elif missing:
            print(f"{len(missing)} proposed route(s) missing from the recording (counted as "
                  f"BUILD_FAILED), e.g. {missing[0]}")
        return 0
