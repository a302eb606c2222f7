"""``gptuner tune``: run (or continue) a study in the foreground, with a progress line."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from gptuner_core.cli._base import Command
from gptuner_core.cli._base import UsageError
from gptuner_core.cli.progress import ProgressPrinter


def parse_duration(text: str, flag: str = "--time-budget") -> float:
    """``90``, ``90s``, ``10m``, ``1.5h`` -> seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", text)
    if not m:
        msg = f"{flag} must look like 90, 90s, 10m or 1.5h (got {text!r})"
        raise UsageError(msg)
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def parse_kv(items: list[str] | None, flag: str) -> dict[str, Any]:
    """``key=value`` pairs; values parsed as JSON when they are JSON (numbers, true/false)."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            msg = f"{flag} takes key=value (got {item!r})"
            raise UsageError(msg)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def parse_epsilons(items: list[str] | None) -> tuple[float | None, dict[str, float]]:
    """``--epsilon 0.01 --epsilon emb=1e-3`` -> (0.01, {"emb": 0.001})."""
    default: float | None = None
    per_output: dict[str, float] = {}
    for item in items or []:
        name, eq, value = item.rpartition("=")
        try:
            number = float(value)
            if eq and not name.strip():
                raise ValueError(item)  # '=0.1': no output named
        except ValueError:
            msg = f"--epsilon takes a number or OUTPUT=number (got {item!r})"
            raise UsageError(msg) from None
        if eq:
            per_output[name] = number
        else:
            default = number
    return default, per_output


def config_from_args(args: argparse.Namespace):  # noqa: ANN201 - StudyConfig
    from gptuner_core.accuracy.slices import split_selectors
    from gptuner_core.backends import default_backend_name
    from gptuner_core.config import StudyConfig
    from gptuner_core.expressions import read_expression_file

    if args.expr is not None and args.expr_file is not None:
        msg = "--expr and --expr-file are mutually exclusive"
        raise UsageError(msg)
    expression = args.expr or ""
    if args.expr_file:
        expression = read_expression_file(args.expr_file)
    model = args.model
    if model is None:
        msg = "MODEL is required for a new study (a model file, or module:factory for torch)"
        raise UsageError(msg)
    if args.expr is None and args.expr_file is None:
        import shlex

        knobs = f"knobs --backend {args.backend or default_backend_name()} --model {shlex.quote(model)}"
        msg = (
            "a new study needs a tunable expression (expected --expr '-knob=[a|b] ...' or --expr-file "
            f"FILE; found neither; 'gptuner {knobs}' lists the knobs)"
        )
        raise UsageError(msg)
    if ":" not in model or Path(model).exists():
        if not Path(model).exists():
            msg = f"model file '{model}' does not exist"
            raise UsageError(msg)
        model = str(Path(model).resolve())
    epsilon, per_output = parse_epsilons(args.epsilon)
    dataset = str(Path(args.dataset).resolve()) if args.dataset else None
    if dataset and not Path(dataset).exists():
        msg = f"dataset file '{args.dataset}' does not exist (expected an .npz of named inputs)"
        raise UsageError(msg)
    return StudyConfig(
        model=model,
        backend=args.backend or default_backend_name(),
        backend_options=parse_kv(args.backend_option, "--backend-option"),
        expression=expression,
        search=args.search,
        strategy_options=parse_kv(args.strategy_option, "--strategy-option"),
        seed=args.seed,
        dataset=dataset,
        batch_size=args.batch_size,
        metric=args.metric,
        atol=args.atol,
        rtol=args.rtol,
        epsilon=epsilon,
        output_epsilons=per_output,
        gate_outputs=tuple(split_selectors(args.gate_outputs or "")),
        task_output=args.task_output,
        no_gate=args.no_gate,
        shapes=args.shapes,
        batch_axes=args.batch_axes,
        input_ranges=args.input_range,
        calibration=str(Path(args.calibration).resolve()) if args.calibration else None,
        measure_shapes=tuple(args.measure_shapes or ()),
        shape_objective=args.shape_objective,
        task_metric=args.task_metric,
        max_task_drop=args.max_task_drop,
        max_candidates=args.max_candidates,
        time_budget_s=parse_duration(args.time_budget) if args.time_budget else None,
        target_speedup=args.target_speedup,
        device_wait_s=parse_duration(args.device_wait, "--device-wait") if args.device_wait else None,
        build_timeout_s=args.build_timeout,
        measure_timeout_s=args.measure_timeout,
        measurement=parse_kv(args.measure_option, "--measure-option"),
        revalidate_top_k=args.revalidate_top_k,
        revalidate_rounds=args.revalidate_rounds,
        min_effect=args.min_effect,
        drift_every=args.drift_every,
        keep_artifacts="best" if args.discard_artifacts else args.keep_artifacts,
        profile_runs=args.profile_runs,
        build_workers=args.build_workers,
        ray=args.ray,
        workers=args.workers,
        normalize=args.normalize,
        output=str(Path(args.output).resolve()) if args.output else None,
        warm_start=tuple(str(Path(w).resolve()) for w in args.warm_start or ()),
    )


class TuneCommand(Command):
    name = "tune"
    help = "tune a model's build routes into a study folder (or --continue one)"
    description = (
        "Expand a tunable expression into routes, build each in an isolated process, gate on\n"
        "accuracy, measure latency, and report the fastest eligible route vs the default.\n\n"
        "example:\n  gptuner tune assets/mlp_digits.onnx --dataset assets/mlp_digits_eval.npz \\\n"
        "      --expr '-quant:mode=[off|qdq|dynamic]' --search fast --study runs/mlp\n\n"
        "a detector with one packed output0 [batch, 4+C, anchors] (pixel boxes, then class scores):\n"
        "gate the scores on their own and the detections against the default route's:\n"
        "  gptuner tune yolo.onnx --dataset frames.npz --expr '-quant:mode=[off|qdq]' \\\n"
        "      --metric cos --gate-outputs 'output0[:, 4:, :]' --epsilon 'output0[:, 4:, :]=0.01' \\\n"
        "      --task-metric 'detection(conf=0.25)' --task-output output0 --max-task-drop 0.02 \\\n"
        "      --study runs/yolo"
    )
    value_options = ("--expr",)
    destinations = {"output": "study"}
    output_suffixes = {"output": (".json", ".bundle", "")}

    runs_study_code = True

    def code_study(self, args: argparse.Namespace) -> str | None:
        return args.study if args.resume else None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        from gptuner_core.strategies import DEFAULT_STRATEGY
        from gptuner_core.strategies import describe_strategies

        parser.add_argument("model", nargs="?", help="model file (ONNX) or module:factory")
        parser.add_argument("--study", required=True, metavar="DIR", help="study folder")
        parser.add_argument("--config", metavar="JSON",
                            help="the whole study configuration as a study.json (StudyConfig "
                            "fields, as the dashboard writes it); other settings are refused")
        parser.add_argument("--continue", dest="resume", action="store_true",
                            help="resume the study in --study (settings come from the study)")
        parser.add_argument("--force", action="store_true",
                            help="continue even if model/software/device changed (recorded)")
        parser.add_argument("--extend", action="store_true",
                            help="with --continue: run a finished study further (re-validation runs "
                            "again and replaces the verdict; a --max-candidates or --time-budget given "
                            "with --continue asks the same). Without either, --continue on a finished "
                            "study re-runs nothing")
        parser.add_argument("--backend", help="backend name (default: tensorrt if available, else onnxruntime)")
        parser.add_argument("--backend-option", action="append", metavar="KEY=VALUE")
        parser.add_argument("--expr", help="tunable expression, e.g. '-k=[a|b] -other=v'")
        parser.add_argument("--expr-file", metavar="FILE", help="expression file (lines joined)")
        strategies = describe_strategies()
        parser.add_argument(
            "--search", default=DEFAULT_STRATEGY, choices=[s["name"] for s in strategies],
            help=f"search strategy (default: {DEFAULT_STRATEGY}): "
            + "; ".join(f"{s['name']}: {s['summary']}" for s in strategies).replace("%", "%%"),
        )
        parser.add_argument("--strategy-option", action="append", metavar="KEY=VALUE",
                            help="strategy option (see 'gptuner strategies')")
        parser.add_argument("--warm-start", action="append", metavar="STUDY_OR_RECORDING",
                            help="start from an earlier study or recording of the same knob database "
                            "or model family: its best routes first, every result as the model's prior "
                            "(repeatable; checked before anything is written)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--dataset", metavar="NPZ", help="named inputs (+ labels) as .npz")
        parser.add_argument("--batch-size", type=int, default=1)
        parser.add_argument("--metric", default="l2", choices=["l0", "l1", "l2", "lInf", "cos"])
        parser.add_argument("--atol", type=float, default=1e-5)
        parser.add_argument("--rtol", type=float, default=1e-5)
        parser.add_argument("--epsilon", action="append", metavar="EPS|OUTPUT=EPS",
                            help="fail a route if an output's loss >= EPS; OUTPUT=EPS sets one "
                            "output's (or slice's: 'output0[:, 4:, :]=0.01') epsilon "
                            "(repeatable, beside a bare default)")
        parser.add_argument("--gate-outputs", metavar="A,B",
                            help="apply the gate to these outputs only, or to slices of them in "
                            "NumPy syntax: 'output0[:, 4:, :]' gates a packed [b, 4+C, A] "
                            "detection head's class scores on their own (losses of all outputs "
                            "and of each slice are recorded)")
        parser.add_argument("--task-output", metavar="OUTPUT",
                            help="the output (or slice) the task metric reads")
        parser.add_argument("--no-gate", action="store_true",
                            help="rank by speed only (no accuracy gate; a warning is printed)")
        parser.add_argument("--shapes", metavar="SPEC",
                            help="input shapes, trtexec style: name:1x3x224x224,other:8x128")
        parser.add_argument("--batch-axes", metavar="SPEC",
                            help="batch axis per input, e.g. state:1,sr:none (none = fed whole)")
        parser.add_argument("--input-range", metavar="SPEC",
                            help="value ranges of synthetic inputs, e.g. input_ids:0..30522,sr:16000")
        parser.add_argument("--calibration", metavar="NPZ",
                            help="a separate calibration dataset for quantization (default: --dataset)")
        parser.add_argument("--measure-shapes", action="append", metavar="SPEC",
                            help="measure latency at this shape profile, trtexec style "
                            "(x:1x16; repeat for several shapes: each candidate is measured at each)")
        parser.add_argument("--shape-objective", default="minimax", metavar="minimax|weighted:W1,W2",
                            help="overall score of several shapes: the worst shape's speed-up "
                            "(minimax, default) or a traffic mix with these weights")
        parser.add_argument("--task-metric", metavar="NAME",
                            help="higher is better: top1 (against labels); agreement with the "
                            "default route: detection (packed head: layout=bca|bac, "
                            "boxes=xywh|xyxy, conf, nms, iou, value=f1|recall|precision|mean_iou), "
                            "topk (k=5) or tokens; or module:function(outputs, labels[, golden])")
        parser.add_argument("--max-task-drop", type=float, help="allowed task-metric drop (e.g. 0.01)")
        parser.add_argument("--max-candidates", type=int)
        parser.add_argument("--time-budget", metavar="DURATION", help="e.g. 10m")
        parser.add_argument("--target-speedup", type=float)
        parser.add_argument("--device-wait", metavar="DURATION",
                            help="longest wait for the measuring device while another study holds "
                            "it, e.g. 5m (default: wait; waiting never counts against --time-budget)")
        parser.add_argument("--build-timeout", type=float, default=600.0, metavar="S")
        parser.add_argument("--measure-timeout", type=float, default=300.0, metavar="S")
        parser.add_argument("--measure-option", action="append", metavar="KEY=VALUE",
                            help="measurement setting, e.g. target_rel_ci=0.02")
        parser.add_argument("--revalidate-top-k", type=int, default=3)
        parser.add_argument("--revalidate-rounds", type=int, default=12, help="round budget of the sequential re-validation (it stops as soon as each contender is decided; each round measures every route in a fresh process with a quarter of the screening budget)")
        parser.add_argument("--min-effect", type=float, default=0.01)
        parser.add_argument("--drift-every", type=int, default=10)
        parser.add_argument("--keep-artifacts", choices=["best", "top-k", "all"], default="top-k",
                            help="whose build outputs stay: top-k (default: the default route's and "
                            "the re-validation contenders'), best (the default's and the winner's) "
                            "or all; duplicates never keep a copy")
        parser.add_argument("--discard-artifacts", action="store_true",
                            help="same as --keep-artifacts best (kept for older scripts)")
        parser.add_argument("--build-workers", type=int, default=1, metavar="K",
                            help="build the next proposals in K processes while one candidate is "
                            "measured (0 = chosen from cores and memory; 1 = one at a time)")
        parser.add_argument("--ray", metavar="auto|ADDRESS",
                            help="run candidates on Ray workers, one per device (pip install 'gptuner[ray]'): "
                            "auto, local, HOST:PORT or ray://HOST[:PORT]")
        parser.add_argument("--workers", type=int, default=1, metavar="N", help="Ray workers (devices)")
        parser.add_argument("--normalize", action="store_true",
                            help="allow different devices: speed-ups against each device's own default")
        parser.add_argument("--profile-runs", type=int, default=10, metavar="N",
                            help="per-layer profile runs after each candidate's latency samples "
                            "(a separate session; 0 = no profile)")
        parser.add_argument("--output", metavar="PATH", help="copy the best artifact here (+ .json, "
                            "+ .bundle); never a study's own file")
        parser.add_argument("--quiet", action="store_true")
        self.defaults = {a.dest: a.default for a in parser._actions}  # noqa: SLF001 - what was given

    def run(self, args: argparse.Namespace) -> int:
        from gptuner_core.backends import default_backend_notice
        from gptuner_core.engine.loop.tuner import Tuner
        from gptuner_core.records import StudyStatus

        study = Path(args.study)
        outputs_only = False
        note = None
        if args.resume:
            from gptuner_core.cli.resume import finished_message
            from gptuner_core.cli.resume import stored_settings
            from gptuner_core.cli.resume import unwritten_output

            stored = stored_settings(study)
            config = resume_config(study, args, getattr(self, "defaults", {}), stored)
            note = unwritten_output(study, stored, config.output)
            # a budget given now (--max-candidates, --time-budget) asks to run further, as --extend does
            extend = args.extend or args.max_candidates is not None or bool(args.time_budget)
            done = None if extend else finished_message(study)
            if done and not config.output:
                print(done)
                if note:
                    print(note, file=sys.stderr)
                return 0
            outputs_only = bool(done)  # finished, --output given now: write it from the verdict
        elif args.config:
            from gptuner_core.cli._base import given_flags

            ignored = given_flags(args, besides={"study", "config", "force", "quiet"})
            if ignored:
                msg = (f"--config takes the whole study configuration from the file, so other settings "
                       f"would be ignored (expected only --study, --force, --quiet beside it; found "
                       f"{', '.join(ignored)})")
                raise UsageError(msg)
            config = config_from_file(args.config)
        else:
            config = config_from_args(args)
            if args.backend is None:
                print(default_backend_notice(), file=sys.stderr)
        printer = None if args.quiet else ProgressPrinter()
        t0 = time.monotonic()
        summary = Tuner(config, study, resume=args.resume, force=args.force, progress=printer,
                        outputs_only=outputs_only).run()
        if printer is not None:
            printer.close()
        waited = (f" ({summary.waited_s:.1f} s of it waiting for the device, not counted against "
                  "--time-budget)") if summary.waited_s >= 0.05 else ""
        print(f"study {summary.study_dir}: {summary.status.value} after {summary.candidates} "
              f"candidates in {time.monotonic() - t0:.1f} s{waited}")
        print(summary.message)
        for warning in summary.warnings:
            print(warning, file=sys.stderr)
        from gptuner_core.cli.show import print_ranking

        print_ranking(study, limit=10)
        if note:
            print(note, file=sys.stderr)
        if summary.output_error:
            print(f"gptuner: error: {summary.output_error}", file=sys.stderr)
            return 1
        return 0 if summary.status in (StudyStatus.FINISHED, StudyStatus.STOPPED) else 1


def config_from_file(path: str):  # noqa: ANN201 - StudyConfig
    """A ``study.json`` (StudyConfig fields) as written by the dashboard or a pipeline."""
    from gptuner_core.config import StudyConfig

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        msg = f"--config '{path}': cannot read it ({exc.strerror or exc})"
        raise UsageError(msg) from None
    except (ValueError, RecursionError) as exc:
        msg = f"--config '{path}': not valid JSON ({exc})"
        raise UsageError(msg) from None
    if not isinstance(data, dict):
        msg = f"--config '{path}': expected a JSON object of study settings (got {type(data).__name__})"
        raise UsageError(msg)
    return StudyConfig.from_json(data)


def resume_config(study: Path, args: argparse.Namespace, defaults: dict | None = None,  # noqa: ANN201 - StudyConfig
                  data: dict[str, Any] | None = None):
    """The stored configuration (:func:`stored_settings`, unless given), with the budgets and
    outputs given on the command line now (``cli.resume``: changed settings refused, stored
    outputs never written through)."""
    from gptuner_core.cli.resume import check_unchanged
    from gptuner_core.cli.resume import outputs_now
    from gptuner_core.cli.resume import stored_settings
    from gptuner_core.config import StudyConfig
    from gptuner_core.engine.files.workspace import StudyWorkspace

    ws = StudyWorkspace(study)
    data = stored_settings(study) if data is None else data
    parsers = (parse_kv, parse_epsilons)
    check_unchanged(args, defaults or {}, data, ws.root, parsers)
    config = StudyConfig.from_json({**data, **outputs_now(args, data, ws.root, parsers)})
    overrides: dict[str, Any] = {}
    if args.max_candidates is not None:
        overrides["max_candidates"] = args.max_candidates
    if args.time_budget:
        overrides["time_budget_s"] = parse_duration(args.time_budget)
    if getattr(args, "device_wait", None):
        overrides["device_wait_s"] = parse_duration(args.device_wait, "--device-wait")
    return config.replace(**overrides)
