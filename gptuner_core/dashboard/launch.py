"""Start, stop and resume tuners from the dashboard (no streamlit here).

A run is a :class:`~gptuner_core.config.StudyConfig`: New run builds one, it is validated with
the CLI's own checks and written as ``STUDY/study.json``, and the tuner is started detached as
``gptuner tune --config STUDY/study.json --study STUDY`` (it survives browser reloads and
dashboard restarts). Resume is ``gptuner tune --study STUDY --continue``: the settings come from
the study itself, never from a re-built command line. A stop request is the file ``STUDY/stop``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any


if TYPE_CHECKING:
    from gptuner_core.config import StudyConfig

LOG_FILE = "tuner.log"


def launch(config: StudyConfig, study_dir: str | Path) -> int:
    """Validate ``config``, write it as the study's ``study.json``, start the tuner; its pid."""
    from gptuner_core.engine.process.launch import launch_config

    return launch_config(config, study_dir)


def resume_args(study_dir: str | Path) -> list[str]:
    """``gptuner tune`` arguments resuming a study: the stored ``--output`` and path options are
    restated only when they lie inside the workspace (the CLI never writes where a folder says);
    one outside is refused here, with its name, before anything starts."""
    from gptuner_core.dashboard.workspace import workspace_dir
    from gptuner_core.engine.process.launch import config_argv
    from gptuner_core.errors import ConfigError
    from gptuner_core.storage.paths import inside
    from gptuner_core.storage.paths import is_path_option
    from gptuner_core.study_code import stored_config

    ws, study = workspace_dir(), Path(study_dir)
    config = stored_config(study) or {}
    args = [*config_argv(study, resume=True), "--trust-study-code"]  # only after the page's confirmation
    wanted = [("--output", "output", config.get("output"))]
    wanted += [("--backend-option", k, v) for k, v in (config.get("backend_options") or {}).items()
               if is_path_option(k) and v not in (None, "")]
    for flag, key, value in wanted:
        if not value:
            continue
        p = Path(str(value)).expanduser()
        p = p if p.is_absolute() else study / p
        if not inside(p, ws):
            msg = (f"this study stores {key}='{value}', outside the workspace '{ws}': Resume writes "
                   "only inside it (run 'gptuner tune --continue' with a destination of your choice)")
            raise ConfigError(msg)
        if flag == "--output":
            args += [flag, str(value)]
        elif not inside(p, study):
            args += [flag, f"{key}={value}"]
    return args


def resume(study_dir: str | Path) -> int:
    """Continue a study with its stored settings; the tuner's pid. The page calls this only after
    the user confirmed the code the study names (``widgets.confirm_code``), hence the flag."""
    from gptuner_core.engine.process.launch import launch_detached

    return launch_detached(resume_args(study_dir), study_dir)


def command(study_dir: str | Path, *, resume: bool = False) -> str:
    """The equivalent shell command, for the user to copy."""
    from gptuner_core.engine.process.launch import cli_command
    from gptuner_core.engine.process.launch import config_argv

    return cli_command(resume_args(study_dir) if resume else config_argv(study_dir))


#: what Live says once Stop was pressed (the tuner reads the request between steps)
STOPPING = ("Stopping: the tuner stops after the candidate in flight; a re-validation of the "
            "finalists under way is cut short after its current round (the verdict then says "
            "so), and Resume re-validates again.")


def request_stop(study_dir: str | Path) -> None:
    """Ask the tuner to stop after the candidate in flight (it polls ``STUDY/stop``)."""
    from gptuner_core.engine.process.launch import request_stop as _stop

    _stop(study_dir)


def stop_requested(study_dir: str | Path) -> bool:
    from gptuner_core.engine.files.workspace import StudyWorkspace

    return StudyWorkspace(study_dir).stop_requested()


def tail(path: str | Path, max_bytes: int = 20_000) -> str:
    """The end of a text file (``""`` when missing, or a link out of its folder: a study's log
    is shown only from inside the study, ``storage.paths.confined``)."""
    from gptuner_core.storage.paths import inside

    p = Path(path)
    if not inside(p, p.absolute().parent):
        return ""
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
