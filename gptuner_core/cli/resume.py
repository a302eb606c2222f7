"""``gptuner tune --continue``: the stored settings, what the command line may say now, and what
it may not change.

* Settings come from the study. A setting given again with ``--continue`` (``--expr``,
  ``--epsilon``, ``--search``...) must equal the stored one; a different one is refused with the
  difference named (one line, exit 2): a new setting is a new study.
* Budgets (``--max-candidates``, ``--time-budget``) extend the search; outputs go where the user
  says *now*: the stored ``output`` is used only when ``--output`` names it again, and a stored
  path option (``cache_dir``, ``*_path``...) outside the study folder only when
  ``--backend-option KEY=VALUE`` restates it (a folder from elsewhere never directs a write).
* A finished study is not re-run: :func:`finished_message` says so (exit 0); ``--extend`` (or a
  budget given now) runs it further.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gptuner_core.cli._base import UsageError


#: argparse dest -> (flag, StudyConfig field) of every setting --continue takes from the study
SETTINGS: dict[str, tuple[str, str]] = {
    "model": ("MODEL", "model"), "backend": ("--backend", "backend"), "expr": ("--expr", "expression"),
    "expr_file": ("--expr-file", "expression"), "search": ("--search", "search"),
    "strategy_option": ("--strategy-option", "strategy_options"), "warm_start": ("--warm-start", "warm_start"),
    "seed": ("--seed", "seed"), "dataset": ("--dataset", "dataset"), "batch_size": ("--batch-size", "batch_size"),
    "metric": ("--metric", "metric"), "atol": ("--atol", "atol"), "rtol": ("--rtol", "rtol"),
    "epsilon": ("--epsilon", "epsilon"), "gate_outputs": ("--gate-outputs", "gate_outputs"),
    "task_output": ("--task-output", "task_output"), "no_gate": ("--no-gate", "no_gate"),
    "shapes": ("--shapes", "shapes"), "batch_axes": ("--batch-axes", "batch_axes"),
    "input_range": ("--input-range", "input_ranges"), "calibration": ("--calibration", "calibration"),
    "measure_shapes": ("--measure-shapes", "measure_shapes"), "shape_objective": ("--shape-objective", "shape_objective"),
    "task_metric": ("--task-metric", "task_metric"), "max_task_drop": ("--max-task-drop", "max_task_drop"),
    "target_speedup": ("--target-speedup", "target_speedup"), "build_timeout": ("--build-timeout", "build_timeout_s"),
    "measure_timeout": ("--measure-timeout", "measure_timeout_s"), "measure_option": ("--measure-option", "measurement"),
    "revalidate_top_k": ("--revalidate-top-k", "revalidate_top_k"),
    "revalidate_rounds": ("--revalidate-rounds", "revalidate_rounds"), "min_effect": ("--min-effect", "min_effect"),
    "drift_every": ("--drift-every", "drift_every"), "keep_artifacts": ("--keep-artifacts", "keep_artifacts"),
    "discard_artifacts": ("--discard-artifacts", "keep_artifacts"), "build_workers": ("--build-workers", "build_workers"),
    "ray": ("--ray", "ray"), "workers": ("--workers", "workers"), "normalize": ("--normalize", "normalize"),
    "profile_runs": ("--profile-runs", "profile_runs"),
}


#: the command line's own parsers (``cli.tune``'s ``parse_kv``, ``parse_epsilons``), passed in
Parsers = tuple[Callable[..., dict[str, Any]], Callable[..., tuple[Any, dict[str, float]]]]


def _given(dest: str, value: Any, stored: Any, parsers: Parsers) -> Any:
    """The command-line value in the stored configuration's form."""
    parse_kv, parse_epsilons = parsers
    if dest in ("model", "dataset", "calibration"):
        return str(Path(value).resolve()) if Path(str(value)).exists() else value
    if dest == "expr_file":
        from gptuner_core.expressions import read_expression_file

        return read_expression_file(value)
    if dest in ("strategy_option", "measure_option"):
        return {**(stored or {}), **parse_kv(value, SETTINGS[dest][0])}
    if dest == "epsilon":
        return parse_epsilons(value)[0]
    if dest == "gate_outputs":
        return [o for o in str(value).split(",") if o]
    if dest in ("warm_start", "measure_shapes"):
        return [str(Path(v).resolve()) if dest == "warm_start" else v for v in value]
    if dest == "discard_artifacts":
        return "best"
    return value


def changed_settings(args: argparse.Namespace, defaults: dict[str, Any], stored: dict[str, Any],
                     parsers: Parsers) -> list[str]:
    """One ``FLAG (stored X, given Y)`` per setting given with ``--continue`` that differs."""
    out = []
    for dest, (flag, field) in SETTINGS.items():
        value = getattr(args, dest, None)
        if value is None or value == defaults.get(dest):
            continue
        given = _given(dest, value, stored.get(field), parsers)
        have = stored.get(field)
        if isinstance(have, tuple):
            have = list(have)
        if json.dumps(given, sort_keys=True, default=str) != json.dumps(have, sort_keys=True, default=str):
            out.append(f"{flag} (stored {have!r}, given {given!r})")
    return out


def check_unchanged(args: argparse.Namespace, defaults: dict[str, Any], stored: dict[str, Any], study: Path,
                    parsers: Parsers) -> None:
    diffs = changed_settings(args, defaults, stored, parsers)
    if diffs:
        msg = (f"--continue takes the settings stored in '{study}'; these differ: {'; '.join(diffs)} "
               "(drop them, or start a new --study for new settings)")
        raise UsageError(msg)


def outputs_now(args: argparse.Namespace, stored: dict[str, Any], study: Path, parsers: Parsers) -> dict[str, Any]:
    """The output settings of this run: ``--output`` as given now (never the stored one), stored
    path options outside the study folder only when restated with ``--backend-option``."""
    from gptuner_core.storage.paths import inside
    from gptuner_core.storage.paths import is_path_option

    given = parsers[0](getattr(args, "backend_option", None), "--backend-option")
    options = dict(stored.get("backend_options") or {})
    for key, value in options.items():
        if not is_path_option(key) or value in (None, ""):
            continue
        p = Path(str(value)).expanduser()
        if inside(p if p.is_absolute() else study / p, study) or given.get(key) == value:
            continue
        msg = (f"study '{study}' stores backend option {key}='{value}', outside its folder: --continue "
               f"writes only where you say now (pass --backend-option {key}={value} to use it)")
        raise UsageError(msg)
    for key, value in given.items():
        if key not in options or (not is_path_option(key) and options[key] != value):
            msg = (f"--backend-option {key}: --continue takes the stored backend options (stored "
                   f"{options.get(key)!r}, given {value!r}; a stored path may be restated)")
            raise UsageError(msg)
    output = str(Path(args.output).resolve()) if getattr(args, "output", None) else None
    return {"output": output, "backend_options": {**options, **given}}


def unwritten_output(study: Path, stored: dict[str, Any], output_now: str | None) -> str | None:
    """The line for a ``--continue`` that does not write the ``--output`` the study was started
    with (a stored path is never written through: the folder may come from elsewhere), naming the
    command that writes it; ``None`` when ``--output`` was given now or none was stored."""
    import shlex

    path = stored.get("output")
    if output_now or not path:
        return None
    command = f"gptuner tune --study {shlex.quote(str(study))} --continue --output {shlex.quote(str(path))}"
    return (f"gptuner: note: the study's stored --output '{path}' was not written (--continue writes "
            f"only where you say now); to write it: {command}")


def finished_message(study: Path) -> str | None:
    """For a finished study: the line saying so and how to extend it; else ``None``."""
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.storage import open_store

    if not StudyWorkspace(study).has_study():
        return None
    with open_store(study, readonly=True) as store:
        if store.get_meta("status") != "finished":
            return None
        winner = store.winner()
        count = len(store.candidates())
    verdict = winner.message if winner is not None else "no verdict"
    return (f"study '{study}' is finished ({count} candidates; {verdict}): nothing re-run. To run it "
            "further, pass --extend or a larger --max-candidates/--time-budget (re-validation then runs "
            "again and replaces the verdict); --output PATH writes the stored winner there")


__all__ = ["SETTINGS", "changed_settings", "check_unchanged", "finished_message", "outputs_now", "unwritten_output"]


def stored_settings(study: Path) -> dict[str, Any]:
    """The stored configuration: the store's, else the folder's ``study.json`` when a kill cut
    the study's creation short."""
    from gptuner_core.engine.files.workspace import StudyWorkspace
    from gptuner_core.errors import StoreError
    from gptuner_core.storage import open_store

    ws = StudyWorkspace(study)
    if ws.has_study():
        with open_store(study, readonly=True) as store:
            data = store.config()
    else:
        data = ws.read_config()
        if data is None:
            left = ws.discard_creation_leftovers()
            what = (f"its creation was cut short before its settings were written ({left} removed); "
                    "run the tune command that created it again") if left else f"expected {ws.store}"
            msg = f"nothing to continue: no study in '{study}' ({what})"
            raise StoreError(msg)
    from gptuner_core.config import StudyConfig

    return StudyConfig.settings_of(data)
