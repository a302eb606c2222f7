"""The New run form as ``gptuner tune`` arguments; start, stop and resume (no streamlit here).

Processes are started by :func:`gptuner_core.engine.launch.launch_detached` (``python -m gptuner_core
tune ...`` in its own session, so it survives browser reloads and dashboard restarts). The
arguments are saved as ``STUDY/launch.json`` for the resume button; a stop request is the file
``STUDY/stop`` the tuner polls between candidates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from gptuner_core.errors import ConfigError


LAUNCH_FILE = "launch.json"
LOG_FILE = "tuner.log"
STOP_FILE = "stop"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """What the New run form collected; :meth:`argv` turns it into ``gptuner tune`` arguments."""

    model: str
    study: str
    backend: str = "onnxruntime"
    expression: str = ""
    search: str = "fast"
    strategy_options: dict[str, Any] = field(default_factory=dict)
    dataset: str | None = None
    batch_size: int | None = None
    metric: str = "l2"
    epsilon: float | None = None
    task_metric: str | None = None
    max_task_drop: float | None = None
    max_candidates: int | None = None
    time_budget_s: float | None = None
    target_speedup: float | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)

    def argv(self) -> list[str]:
        """Arguments after ``gptuner tune``."""
        if not self.model:
            msg = "a model is required (choose a bundled sample or upload an .onnx file)"
            raise ConfigError(msg)
        if not self.expression.strip():
            msg = "a tunable expression is required (e.g. -ort:graph_optimization_level=[0|1|2|99])"
            raise ConfigError(msg)
        out = [self.model, "--backend", self.backend, "--expr", self.expression.strip(),
               "--search", self.search]
        for key, value in self.strategy_options.items():
            out += ["--strategy-option", f"{key}={value}"]
        if self.dataset:
            out += ["--dataset", self.dataset]
        if self.batch_size:
            out += ["--batch-size", str(self.batch_size)]
        out += ["--metric", self.metric]
        if self.epsilon is not None:
            out += ["--epsilon", repr(float(self.epsilon))]
        if self.task_metric:
            out += ["--task-metric", self.task_metric]
        if self.max_task_drop is not None:
            out += ["--max-task-drop", repr(float(self.max_task_drop))]
        if self.max_candidates:
            out += ["--max-candidates", str(int(self.max_candidates))]
        if self.time_budget_s:
            out += ["--time-budget", f"{int(self.time_budget_s)}s"]
        if self.target_speedup:
            out += ["--target-speedup", repr(float(self.target_speedup))]
        for key, value in self.backend_options.items():
            out += ["--backend-option", f"{key}={value}"]
        out += ["--study", self.study]
        return out


def cli_command(argv: list[str]) -> str:
    """The equivalent shell command (``gptuner tune ...``), for the user to copy."""
    from gptuner_core.engine.launch import cli_command as _cli

    return _cli(argv)


def launch(argv: list[str], study_dir: str | Path) -> int:
    """Start the tuner detached with ``gptuner tune ARGV``; return its pid.

    Saves ``launch.json`` (for :func:`resume_argv`) and clears an old stop request first.
    Raises ConfigError when a tuner is already running on the study.
    """
    from gptuner_core.engine.launch import launch_detached

    study = Path(study_dir)
    study.mkdir(parents=True, exist_ok=True)
    (study / STOP_FILE).unlink(missing_ok=True)
    if "--continue" not in argv:
        (study / LAUNCH_FILE).write_text(json.dumps({"argv": argv}, indent=1))
    return int(launch_detached(argv, study))


def request_stop(study_dir: str | Path) -> None:
    """Ask the tuner to stop after the candidate in flight (it polls ``STUDY/stop``)."""
    from gptuner_core.engine.launch import request_stop as _stop

    _stop(study_dir)


def stop_requested(study_dir: str | Path) -> bool:
    return (Path(study_dir) / STOP_FILE).exists()


def resume_argv(study_dir: str | Path, config: dict[str, Any] | None = None) -> list[str]:
    """The argv that continues a study: the saved launch argv (or one rebuilt from the study
    config) plus ``--continue``."""
    study = Path(study_dir)
    saved = study / LAUNCH_FILE
    argv: list[str] | None = None
    if saved.is_file():
        try:
            argv = list(json.loads(saved.read_text())["argv"])
        except (ValueError, KeyError, TypeError):
            argv = None
    if argv is None:
        cfg = config or {}
        if not cfg.get("model"):
            msg = f"cannot resume '{study}': no {LAUNCH_FILE} and no model in the study configuration"
            raise ConfigError(msg)
        argv = RunRequest(
            model=str(cfg["model"]),
            study=str(study),
            backend=str(cfg.get("backend", "onnxruntime")),
            expression=str(cfg.get("expression", "")),
            search=str(cfg.get("search", "fast")),
            dataset=cfg.get("dataset"),
            metric=str(cfg.get("metric", "l2")),
            epsilon=cfg.get("epsilon"),
        ).argv()
    return [*argv, "--continue"] if "--continue" not in argv else argv


def tail(path: str | Path, max_bytes: int = 20_000) -> str:
    """The end of a text file (``""`` when missing)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return text if size <= max_bytes else "…" + text.split("\n", 1)[-1]


@dataclass(frozen=True, slots=True, kw_only=True)
class StrategyChoice:
    """A strategy for the New run form: name, one-line summary, declared options."""

    name: str
    summary: str
    options: dict[str, Any]


def _get(item: Any, key: str, default: Any = None) -> Any:
    return item.get(key, default) if isinstance(item, dict) else getattr(item, key, default)


def strategy_choices() -> list[StrategyChoice]:
    """Strategies from ``gptuner_core.strategies.describe_strategies()`` (a list of entries, or a
    name -> entry mapping; entries are dicts or objects with ``summary`` and ``options``)."""
    from gptuner_core.strategies import describe_strategies

    described = describe_strategies()
    items = (
        [(name, entry) for name, entry in described.items()]
        if isinstance(described, dict)
        else [(_get(entry, "name"), entry) for entry in described]
    )
    return [
        StrategyChoice(
            name=str(name),
            summary=str(_get(entry, "summary", "") or ""),
            options=dict(_get(entry, "options", {}) or {}),
        )
        for name, entry in items
    ]
