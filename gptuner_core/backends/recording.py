"""The ``replay`` backend: a recording described as a backend (knob database, inputs, environment).

``model`` is the recording itself: a study folder recorded earlier by the tuner (real results)
or a recording JSON of ``benchmarks/record_sweep.py`` (option ``recording`` overrides it). It
builds nothing: a study on this backend is answered by
:class:`gptuner_core.engine.evaluate.recorded.RecordedEvaluator` (one semantics for every replay, stated
there). It is a feature for comparing strategies offline, never a stand-in for a real backend in
tests of the tuner's real path.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gptuner_core.backends._base import Availability
from gptuner_core.backends._base import Backend
from gptuner_core.backends._base import BuildResult
from gptuner_core.backends._base import Runner
from gptuner_core.backends._base import TensorSpec
from gptuner_core.errors import BackendError


if TYPE_CHECKING:
    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.recording import Recording
    from gptuner_core.routes import Route

_CACHE: dict[str, Recording] = {}


class RecordingBackend(Backend):
    name = "replay"
    option_declarations = {
        "recording": ("study folder or recording JSON to replay (default: the model path)", ""),
    }

    @classmethod
    def availability(cls) -> Availability:
        return Availability(available=True, reason="", version="1")

    def recording(self, model: Path) -> Recording:
        from gptuner_core.recording import load_recording

        source = str(self.options.get("recording") or model)
        if source not in _CACHE:
            _CACHE[source] = load_recording(source)
        return _CACHE[source]

    def describe(self, model: Path) -> KnobDatabase:
        return self.recording(model).db

    def input_specs(self, model: Path) -> list[TensorSpec]:
        specs = self.recording(model).config.get("inputs") or []
        if not specs:
            # recordings made outside the tuner carry no input description; replayed runs
            # answer from the recording and ignore their inputs, so one small input stands in
            return [TensorSpec(name="input", dtype="float32", shape=("batch", 1))]
        return [TensorSpec(name=s["name"], dtype=s["dtype"], shape=tuple(s["shape"])) for s in specs]

    def environment(self) -> dict[str, str]:
        return {"backend_version": "replay-1", "device": "recorded study", "runtime": "replay"}

    def build(
        self, model: Path, route: Route, workdir: Path, *, calibration: dict[str, Any] | None = None
    ) -> BuildResult:
        msg = (
            "the replay backend builds nothing: a study on it is answered by the recorded "
            "evaluator (gptuner_core.engine.evaluate.recorded)"
        )
        raise BackendError(msg)

    def load(self, build: BuildResult) -> Runner:
        msg = "the replay backend has no runner (answers come from the recorded evaluator)"
        raise BackendError(msg)
