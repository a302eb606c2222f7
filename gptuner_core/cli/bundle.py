"""``gptuner bundle`` (a study's baseline bundle) and ``gptuner gate`` (a change against one)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError
from gptuner_core.cli._base import at_least


if TYPE_CHECKING:
    from gptuner_core.bundle import Bundle
    from gptuner_core.config import StudyConfig


class BundleCommand(Command):
    name = "bundle"
    destinations = {"output": "study"}
    help = "write a study's recommended artifact + baseline evidence as a verified bundle"
    description = (
        "Copy the recommended candidate's artifact (the default route when nothing won), its\n"
        "route, the fingerprint, raw latency samples of it and of the default route, golden\n"
        "outputs and inputs, the rebuild commands and a manifest with the sha256 of every file.\n\n"
        "example:\n  gptuner bundle runs/mlp -o baseline/"
    )

    runs_study_code = True

    def code_study(self, args: argparse.Namespace) -> str | None:
        return args.study

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("study", metavar="STUDY", help="study folder")
        parser.add_argument("-o", "--output", required=True, metavar="DIR", help="new or empty folder")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.bundle import load_bundle
        from gptuner_core.bundle import write_bundle

        out = write_bundle(args.study, args.output)
        b = load_bundle(out)
        from gptuner_core.cli.show import verdict_lines

        for line in verdict_lines(b.winner):  # the verdict the bundle carries, first
            print(line)
        print(f"bundle {out}: candidate #{b.candidate} route {b.route or '(default)'}; "
              f"{len(b.files)} files verified")
        if not b.timing_cache.get("included"):
            print(f"timing cache: not included ({b.timing_cache.get('reason')})")
        return 0


def _fraction(flag: str, text: str, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (low < value < high):
        msg = f"{flag} must be a number in ({low:g}, {high:g}) (got {text!r})"
        raise UsageError(msg)
    return value


class GateCommand(Command):
    name = "gate"
    help = "gate a model change against a baseline bundle (exit 0 pass, 1 regression, 2 usage, 3 inconclusive)"
    description = (
        "Build the candidate (--model with the bundle's route or --route), check its accuracy\n"
        "against the bundle's golden outputs, then measure it against the bundle's artifact in\n"
        "interleaved rounds of fresh processes (holding the device lock) until a slow-down beyond\n"
        "--threshold is shown or ruled out.\n\n"
        "exit status: 0 no change or improvement; 1 regression, accuracy failure or a candidate\n"
        "that cannot run; 2 usage error (incl. incomparable fingerprints); 3 inconclusive.\n\n"
        "example:\n  gptuner gate baseline/ --model model.onnx --junit gate.xml --markdown gate.md"
    )
    value_options = ("--route",)
    empty_ok = ("route",)
    destinations = {"json": None, "junit": None, "markdown": None, "workdir": None}

    runs_study_code = True

    def code_study(self, args: argparse.Namespace) -> str | None:
        return args.baseline

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("baseline", metavar="BASELINE", help="bundle folder ('gptuner bundle')")
        parser.add_argument("--model", required=True, help="the candidate model (a new version)")
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--route", help="build route of the candidate (default: the bundle's)")
        which.add_argument("--artifact", help="a built artifact to gate as it is (no accuracy check)")
        parser.add_argument("--dataset", metavar="NPZ",
                            help="measure and check accuracy on these inputs (golden outputs: the "
                            "bundle's route rebuilt on the bundled model); default: the bundle's inputs")
        parser.add_argument("--threshold", default="0.05", help="practical threshold (default 0.05 = 5%%)")
        parser.add_argument("--confidence", default="0.95", help="confidence of the interval (default 0.95)")
        parser.add_argument("--min-rounds", type=at_least(2), default=4)
        parser.add_argument("--max-rounds", type=at_least(2), default=20)
        parser.add_argument("--time-budget", metavar="DURATION", help="e.g. 5m (then inconclusive)")
        parser.add_argument("--measure-option", action="append", metavar="KEY=VALUE",
                            help="measurement setting for every process, e.g. max_time_s=0.5")
        parser.add_argument("--allow-mismatch", action="store_true",
                            help="compare even if device/software/input fingerprints differ")
        parser.add_argument("--lock-timeout", metavar="DURATION",
                            help="give up (exit 2) when the measuring device stays busy this long "
                            "(default: wait, printing who holds it)")
        parser.add_argument("--workdir", metavar="DIR", help="keep the gate's processes' folders here")
        parser.add_argument("--seed", type=at_least(0), default=0)
        parser.add_argument("--json", metavar="FILE")
        parser.add_argument("--junit", metavar="FILE", help="JUnit XML (one test case)")
        parser.add_argument("--markdown", metavar="FILE", help="a pull-request comment")

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.bundle import load_bundle
        from gptuner_core.bundle.gate import GateSettings
        from gptuner_core.bundle.gate import run_gate
        from gptuner_core.bundle.outputs import write_outputs
        from gptuner_core.cli.tune import parse_duration
        from gptuner_core.cli.tune import parse_kv

        settings = GateSettings(
            threshold=_fraction("--threshold", args.threshold, 0.0, 1.0),
            confidence=_fraction("--confidence", args.confidence, 0.5, 1.0),
            min_rounds=args.min_rounds, max_rounds=args.max_rounds, seed=args.seed,
            max_time_s=parse_duration(args.time_budget) if args.time_budget else None,
            allow_mismatch=args.allow_mismatch,
            lock_timeout_s=parse_duration(args.lock_timeout) if args.lock_timeout else None,
        )
        if not 2 <= settings.min_rounds <= settings.max_rounds:
            msg = f"--min-rounds must be >= 2 and <= --max-rounds (got {settings.min_rounds} and {settings.max_rounds})"
            raise UsageError(msg)
        model = Path(args.model)
        if not model.exists():
            msg = f"--model '{args.model}' does not exist (expected the candidate model file)"
            raise UsageError(msg)
        if args.dataset and not Path(args.dataset).is_file():
            msg = f"--dataset '{args.dataset}' does not exist (expected an .npz of named inputs)"
            raise UsageError(msg)
        if args.artifact and not Path(args.artifact).exists():
            msg = f"--artifact '{args.artifact}' does not exist (expected a built artifact)"
            raise UsageError(msg)
        for flag, path in (("--json", args.json), ("--junit", args.junit), ("--markdown", args.markdown)):
            _check_writable(flag, path)
        from gptuner_core.config import check_measurement

        measurement = check_measurement(parse_kv(args.measure_option, "--measure-option"))
        bundle = load_bundle(args.baseline)
        config, current, specs = _candidate(bundle, model, measurement, route=args.route)
        if args.workdir:  # a fresh folder per run inside it: runs never share process folders
            Path(args.workdir).mkdir(parents=True, exist_ok=True)
            workdir = Path(tempfile.mkdtemp(prefix="gate-", dir=Path(args.workdir).absolute()))
        else:
            workdir = Path(tempfile.mkdtemp(prefix="gptuner-gate-"))
        try:
            res = run_gate(
                bundle, config, workdir, settings, route=args.route, artifact=args.artifact,
                current_fingerprint=current, specs=specs,
                dataset=Path(args.dataset).absolute() if args.dataset else None,
                on_round=lambda done, total, _u: print(f"round {done}/{total}", file=sys.stderr),
                on_wait=lambda w: print(f"gate: {w.message}", file=sys.stderr),
            )
        finally:
            if not args.workdir:
                shutil.rmtree(workdir, ignore_errors=True)
        write_outputs(res, json_path=args.json, junit=args.junit, markdown=args.markdown)
        print(f"gate: {res.decision.value} (exit {res.exit_code}): {res.message}")
        return res.exit_code


def _check_writable(flag: str, path: str | None) -> None:
    import os

    if not path:
        return
    target = Path(path).absolute()
    parent = next((p for p in [target.parent, *target.parents] if p.exists()), None)
    if target.is_dir() or parent is None or not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        msg = f"{flag} '{path}' cannot be written (expected a file path in a writable folder)"
        raise UsageError(msg)


def _candidate(
    bundle: Bundle, model: Path, measurement: dict[str, Any], *, route: str | None = None,
) -> tuple[StudyConfig, dict[str, Any], list[Any]]:
    """The candidate's study configuration (the bundle's, on ``model``) and its fingerprint."""
    from gptuner_core import fingerprint as fp
    from gptuner_core.backends import load_backend
    from gptuner_core.config import StudyConfig

    cfg = StudyConfig.from_json(dict(bundle.config))
    cfg = cfg.replace(model=str(model.resolve()), keep_artifacts=True, profile_runs=0,
                      measurement={**cfg.measurement, **measurement}, output=None, warm_start=())
    backend = load_backend(cfg.backend, cfg.backend_options)
    specs = backend.input_specs(model)
    db = backend.describe(model)
    if route:  # a route naming unknown knobs or values is bad input, refused before measuring
        from gptuner_core.errors import ExpressionError
        from gptuner_core.expressions import Expression

        try:
            Expression.parse(route, db)
        except ExpressionError as exc:
            msg = f"--route {route!r} does not fit model '{model}': {exc}"
            raise UsageError(msg) from None
    current = fp.compute(model=cfg.model, backend_name=cfg.backend, backend=backend, db=db, specs=specs,
                         measured_shapes=cfg.measure_shapes)
    return cfg, current, specs
