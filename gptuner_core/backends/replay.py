"""A backend that answers builds and measurements from a recorded study.

``model`` is the recording itself: a study folder recorded earlier by the tuner (real results)
or a recording JSON of ``benchmarks/record_sweep.py`` (option ``recording`` overrides it).
:meth:`ReplayBackend.build` looks the route up by :meth:`Route.key`: a route missing from the
recording, or recorded as failed, raises :class:`BackendError` with the recorded reason; else it
writes a small artifact (the recorded record as JSON) so the engine can hash it. The runner
replays the recorded per-call samples deterministically: ``time_calls(n)`` returns ``n`` × the
next recorded sample (cycling), so the measurement layer sees the recorded distribution.
Outputs for the accuracy gate come from ``candidates/NNNNN/outputs.npz`` of a recorded study
folder; without them :meth:`Runner.infer` raises a BackendError saying so.

It is a feature for comparing strategies offline, never a stand-in for a real backend in tests of
the tuner's real path. :func:`gptuner_core.recording.simulate` is the faster, in-process harness.
"""

from __future__ import annotations

import json
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
    import numpy as np

    from gptuner_core.knobs import KnobDatabase
    from gptuner_core.recording import Recording
    from gptuner_core.records import CandidateRecord
    from gptuner_core.routes import Route

_CACHE: dict[str, Recording] = {}


class ReplayRunner(Runner):
    """Replays one record's samples; ``infer`` returns its recorded outputs when there are any."""

    def __init__(self, record: dict[str, Any], outputs: Path | None) -> None:
        self.record = record
        self.samples = [float(s) for s in record.get("samples_ms") or ()]
        if not self.samples and record.get("latency"):
            self.samples = [float(record["latency"]["median_ms"])]
        self.outputs = outputs
        self._i = 0

    def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        import numpy as np

        if self.outputs is None or not self.outputs.exists():
            msg = "replay: the recording has no outputs for this route (accuracy cannot be replayed)"
            raise BackendError(msg)
        with np.load(self.outputs) as data:
            return {k: data[k] for k in data.files}

    def recorded_accuracy(self) -> dict[str, Any] | None:
        """The recorded accuracy verdict, used by the engine when no outputs were recorded."""
        if self.outputs is not None and self.outputs.exists():
            return None
        return {
            "accuracy": self.record.get("accuracy"),
            "state": self.record.get("state"),
            "error": self.record.get("error"),
        }

    def prepare(self, feeds: dict[str, np.ndarray]) -> None:
        self._i = 0

    def time_calls(self, n: int) -> int:
        if not self.samples:
            msg = "replay: the recording has no latency samples for this route"
            raise BackendError(msg)
        ms = self.samples[self._i % len(self.samples)]
        self._i += 1
        return int(round(ms * 1e6 * n))

    def telemetry(self) -> dict[str, Any]:
        return {"replay_sample_index": self._i}


class ReplayBackend(Backend):
    name = "replay"
    option_declarations = {
        "recording": ("study folder or recording JSON to replay (default: the model path)", ""),
    }

    @classmethod
    def availability(cls) -> Availability:
        return Availability(available=True, reason="", version="1")

    def _recording(self, model: Path) -> Recording:
        from gptuner_core.recording import load_recording

        source = str(self.options.get("recording") or model)
        if source not in _CACHE:
            _CACHE[source] = load_recording(source)
        return _CACHE[source]

    def describe(self, model: Path) -> KnobDatabase:
        return self._recording(model).db

    def input_specs(self, model: Path) -> list[TensorSpec]:
        specs = self._recording(model).config.get("inputs") or []
        if not specs:
            # recordings made outside the tuner carry no input description; replayed runs
            # answer from the recording and ignore their inputs, so one small input stands in
            return [TensorSpec(name="input", dtype="float32", shape=("batch", 1))]
        return [TensorSpec(name=s["name"], dtype=s["dtype"], shape=tuple(s["shape"])) for s in specs]

    def environment(self) -> dict[str, str]:
        return {"backend_version": "replay-1", "device": "recorded study", "runtime": "replay"}

    def lookup(self, model: Path, route: Route) -> CandidateRecord:
        rec = self._recording(model)
        found = rec.by_key.get(route.key(rec.db))
        if found is None:
            msg = f"replay: route not in the recording {rec.source}: {route}"
            raise BackendError(msg)
        return found

    def build(
        self, model: Path, route: Route, workdir: Path, *, calibration: dict[str, Any] | None = None
    ) -> BuildResult:
        found = self.lookup(model, route)
        if found.latency is None or found.state.is_failure():
            msg = f"replay: recorded {found.state.value}: {found.error or 'no latency'}"
            raise BackendError(msg)
        workdir.mkdir(parents=True, exist_ok=True)
        artifact = workdir / "replay_record.json"
        artifact.write_text(json.dumps(found.to_json()))
        rec = self._recording(model)
        outputs = Path(rec.source) / "candidates" / f"{found.number:05d}" / "outputs.npz"
        return BuildResult(
            artifact=artifact,
            effective_route=found.effective_route or str(route),
            info={"recorded_number": found.number, "outputs": str(outputs) if outputs.exists() else ""},
        )

    def load(self, build: BuildResult) -> Runner:
        record = json.loads(Path(build.artifact).read_text())
        outputs = build.info.get("outputs") or None
        return ReplayRunner(record, Path(outputs) if outputs else None)
