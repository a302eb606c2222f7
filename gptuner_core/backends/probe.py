"""Ask a backend in a child process: a model's knob database and input specs, the environment.

A long-lived process (the dashboard's server) must not import a heavy framework to fill a form:
``import torch`` costs seconds and hundreds of MB, and stays for the life of the server. A
backend that declares ``heavy_import = True`` is asked here instead, in a fresh interpreter
(``python -m gptuner_core.backends.probe describe BACKEND MODEL``, ``... environment BACKEND``
or ``... repro BACKEND MODEL ROUTE``), and answers in JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import BackendError
from gptuner_core.knobs import KnobDatabase


#: seconds a child may take (loading torch and the model on a busy 2-core machine)
TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelFacts:
    """What a form needs from a backend about one model."""

    knob_db: KnobDatabase
    input_specs: tuple[TensorSpec, ...]


def _answer(backend: str, model: str) -> dict[str, Any]:
    from gptuner_core.backends import get_backend
    from gptuner_core.errors import GptunerError

    try:
        b = get_backend(backend)
        db = b.describe(Path(model))
        specs = b.input_specs(Path(model))
    except (GptunerError, OSError, ValueError, ImportError) as exc:
        return {"error": str(exc)}
    return {"knob_db": db.to_json(), "input_specs": [asdict(s) for s in specs]}


def _environment(backend: str) -> dict[str, Any]:
    from gptuner_core.backends import get_backend
    from gptuner_core.errors import GptunerError

    try:
        return {"environment": {k: str(v) for k, v in get_backend(backend).environment().items()}}
    except (GptunerError, OSError, ImportError) as exc:
        return {"error": str(exc)}


def _repro(backend: str, model: str, route: str) -> dict[str, Any]:
    from gptuner_core.backends import get_backend
    from gptuner_core.errors import GptunerError
    from gptuner_core.routes import Route

    try:
        return {"repro": get_backend(backend, {}).repro(Path(model), Route.parse(route))}
    except (GptunerError, OSError, ImportError) as exc:
        return {"error": str(exc)}


def _ask(args: list[str], what: str, timeout_s: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "gptuner_core.backends.probe", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)  # noqa: S603
    except subprocess.TimeoutExpired:
        msg = f"{args[1]} did not {what} within {timeout_s:g} s"
        raise BackendError(msg) from None
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        msg = f"{args[1]} could not {what}: {tail}"
        raise BackendError(msg) from None
    if "error" in answer:
        raise BackendError(answer["error"])
    return answer


def environment(backend: str, *, timeout_s: float = TIMEOUT_S) -> dict[str, str]:
    """``Backend.environment()`` of ``backend`` on this machine, from a child process.

    Raises BackendError when the backend cannot say (its framework is missing)."""
    return dict(_ask(["environment", backend], "describe this machine", timeout_s)["environment"])


def repro(backend: str, model: str | Path, route: str, *, timeout_s: float = TIMEOUT_S
          ) -> dict[str, str]:
    """``Backend.repro(model, route)`` (backend-specific reproduce commands), from a child."""
    answer = _ask(["repro", backend, str(model), route], "write its reproduce commands", timeout_s)
    return dict(answer["repro"])


def model_facts(backend: str, model: str | Path, *, timeout_s: float = TIMEOUT_S) -> ModelFacts:
    """The backend's knob database and input specs for ``model``, computed in a child process.

    Raises BackendError with the backend's own message (a bad model, a missing framework)."""
    answer = _ask(["describe", backend, str(model)], f"describe {Path(model).name}", timeout_s)
    specs = tuple(TensorSpec(name=s["name"], dtype=s["dtype"], shape=tuple(s["shape"]))
                  for s in answer["input_specs"])
    return ModelFacts(knob_db=KnobDatabase.from_json(answer["knob_db"], source=str(model)),
                      input_specs=specs)


def main(argv: list[str] | None = None) -> int:
    command, *args = sys.argv[1:] if argv is None else argv
    answers = {"describe": _answer, "environment": _environment, "repro": _repro}
    answer = answers[command](*args)
    sys.stdout.write("\n" + json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
